/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/shrinkmap"
)

// SendRecord is what this process knows of a Delegation's sends whose task
// id is not known yet: when they actually left (a send can wait for room
// in its Agent's pool long after its marker was written) and what the
// look-ups after them proved. A process that starts knows nothing: every
// call the one before it made has ended with it.
type SendRecord struct {
	// FirstLeft is when the first send of this process got its slot and
	// went out.
	FirstLeft time.Time
	// Deadline is when the latest send's call ended at the latest: past it,
	// this process holds no request of that send any more.
	Deadline time.Time
	// FailedLookUps counts look-ups in a row that got no usable answer.
	FailedLookUps int
}

// SendRecord returns the record of a Delegation's sends, if any.
func (d *Dispatcher) SendRecord(key types.NamespacedName) (SendRecord, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.sends[key]
	return r, ok
}

// SendResolved drops the record once the send's fate is known (a task id,
// a refusal, the Delegation settled or gone).
func (d *Dispatcher) SendResolved(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sends = shrinkmap.Delete(d.sends, key, &d.peaks.sends)
}

// sendLeft records a send whose call starts now and ends by deadline; it is
// called with d.mu held.
func (d *Dispatcher) sendLeft(key types.NamespacedName, now, deadline time.Time) {
	r := d.sends[key]
	if r.FirstLeft.IsZero() {
		r.FirstLeft = now
	}
	r.Deadline = deadline
	d.sends[key] = r
}

// lookedUp counts a look-up's answer and says whether the look-up started
// after the latest send's own deadline (always, when this process made no
// send); it is called with d.mu held.
func (d *Dispatcher) lookedUp(key types.NamespacedName, started time.Time, failed bool) (afterDeadline bool) {
	r, ok := d.sends[key]
	if !ok {
		if !failed {
			return true
		}
		r = SendRecord{}
	}
	if failed {
		r.FailedLookUps++
	} else {
		r.FailedLookUps = 0
	}
	d.sends[key] = r
	return r.Deadline.IsZero() || started.After(r.Deadline)
}
