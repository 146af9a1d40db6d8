/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// Records the controller shows while it waits on an agent: what it noted
// keeps the phase and reason and changes only the message.

// Noted is the record that shows msg as the outcome's message, the phase
// and reason unchanged; false while no outcome is shown yet (nothing to
// note on).
func Noted(st *v1alpha1.DelegationStatus, msg string) (Record, bool) {
	if st.Outcome == nil {
		return Record{}, false
	}
	out := *st.Outcome
	out.Message = msg
	return Record{Phase: st.Phase, Outcome: out}, true
}

// SendNoted shows why a send is still pending, without changing its phase;
// a Delegation that shows no phase yet (its first send's answer was lost or
// unusable) shows Pending, reason Sending: a phase is always shown.
func SendNoted(st *v1alpha1.DelegationStatus, msg string) Record {
	if rec, ok := Noted(st, msg); ok && st.Phase != "" {
		return rec
	}
	return Progress(v1alpha1.PhasePending, ReasonSending, msg)
}

// AfterReadError decides after a read of the task that failed: a task the
// agent no longer knows is lost (settle); any other error is shown in the
// outcome and the task read again at its own cadence (poll, lease renewal,
// deadline), never with a growing backoff that would let a lease lapse.
// False: nothing to record (no outcome shown yet).
func AfterReadError(st *v1alpha1.DelegationStatus, err error) (Read, bool) {
	if a2a.IsTaskNotFound(err) {
		return Read{Next: ReadSettle, Record: Lost()}, true
	}
	rec, ok := Noted(st, "the agent did not answer: "+err.Error())
	return Read{Next: ReadGoOn, Record: rec}, ok
}
