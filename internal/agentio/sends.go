/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/shrinkmap"
)

// SendRecord is what this process knows of a Delegation's sends whose task
// id is not known yet: when the latest one's call ends at the latest, and
// what the look-ups after it proved. A process that starts knows nothing of
// its predecessor's sends: what it needs of them is in the object
// (status.sendDeadline).
type SendRecord struct {
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

// sendLeft records a send whose call ends by deadline; it is called with
// d.mu held.
func (d *Dispatcher) sendLeft(key types.NamespacedName, deadline time.Time) {
	r := d.sends[key]
	r.Deadline = deadline
	d.sends[key] = r
}

// proofAfter is when an answered look-up by c that finds no task starts to
// prove that no send of another process started: the send's recorded
// deadline, or, sooner, one call's time after this process began to make
// calls (a process before it was fenced then: no send of it left later,
// and each that left ended by its deadline); it is called with d.mu held.
func (d *Dispatcher) proofAfter(c Call) time.Time {
	if !c.fencedSend {
		return c.proofAfter
	}
	fenced := d.leadingSince.Add(CallTimeout(c.Timeout, d.MaxCallTimeout) + delegation.ListingLag)
	if c.proofAfter.IsZero() || fenced.Before(c.proofAfter) {
		return fenced
	}
	return c.proofAfter
}

// lookedUp counts a look-up's answer and says whether the look-up started
// after the latest send's deadline and the agent's listing lag: the deadline
// of this process's own send when it made one, else proofAfter, the
// deadline recorded with the send by whichever process made it. It is
// called with d.mu held.
func (d *Dispatcher) lookedUp(key types.NamespacedName, started time.Time, failed bool, proofAfter time.Time) (afterDeadline bool) {
	r, ok := d.sends[key]
	if !ok {
		if !failed {
			return started.After(proofAfter)
		}
		r = SendRecord{}
	}
	if failed {
		r.FailedLookUps++
	} else {
		r.FailedLookUps = 0
	}
	d.sends[key] = r
	if r.Deadline.IsZero() {
		return started.After(proofAfter)
	}
	return started.After(r.Deadline.Add(delegation.ListingLag))
}
