/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// RecordLease records what a task read back says of the lease asked for
// (expiresAt: the agent's grant, zero when it granted none; declared: the
// Agent's card declares the lease extension). status.lease changes only
// when the grant first shows, or to say once that none came: renewals
// cost no API server write.
func RecordLease(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, expiresAt time.Time, declared bool) {
	if spec.Lease == nil {
		return
	}
	ttl := spec.Lease.TTL
	switch {
	case !expiresAt.IsZero() && (st.Lease == nil || !st.Lease.Granted):
		until := metav1.NewTime(expiresAt)
		st.Lease = &v1alpha1.LeaseStatus{TTL: &ttl, Granted: true, GrantedUntil: &until}
	case expiresAt.IsZero() && st.Lease == nil:
		reason := "the agent did not grant a lease"
		if !declared {
			reason = "the agent card does not declare the lease extension"
		}
		st.Lease = &v1alpha1.LeaseStatus{TTL: &ttl, Granted: false, Reason: reason}
	}
}

// ReasonLeaseLapsed: the agent did not answer for the task for a whole
// ttl, so its lease lapsed; the task was cancelled (the cancel confirmed)
// and the attempt ended. ReasonCancelUnconfirmed: the same, but the agent
// never confirmed the cancel, so the task may still run and no retry
// follows.
const (
	ReasonLeaseLapsed       = "LeaseLapsed"
	ReasonCancelUnconfirmed = "CancelUnconfirmed"
)

// LeaseLapsed reports whether the task's lease lapsed and, under a retry
// policy that retries LeaseLapsed, the attempt ends: its cancel comes
// first (Gate's StepCancel), and the retry only once the agent confirmed
// it, so never two attempts run. A lapse is what this process saw: no
// answer from the agent for a whole ttl since the last one
// (o.LeaseRenewed); once recorded (status.lease.lapsedAt) it stays.
func LeaseLapsed(o Observation) bool {
	st, l := o.Status, o.Status.Lease
	switch {
	case o.Retry == nil || !Retries(o.Retry, v1alpha1.FailureLeaseLapsed), st.TaskID == "", l == nil, !l.Granted:
		return false
	case l.LapsedAt != nil:
		return true
	}
	at := LeaseLapsesAt(o)
	return !at.IsZero() && !o.Now.Before(at)
}

// LeaseLapsesAt is when the lease of a followed task lapses unless the
// agent answers before (zero: no granted lease, or no answer seen yet).
func LeaseLapsesAt(o Observation) time.Time {
	l := o.Status.Lease
	if l == nil || !l.Granted || l.TTL == nil || o.LeaseRenewed.IsZero() {
		return time.Time{}
	}
	return o.LeaseRenewed.Add(l.TTL.Duration)
}

// LeaseLapse is the step that ends an attempt whose lease lapsed: cancel
// the task, then fail with class LeaseLapsed.
func LeaseLapse(o Observation) Step {
	msg := "the lease lapsed: the agent did not answer for the task for its ttl"
	if l := o.Status.Lease; l != nil && l.TTL != nil {
		msg += " (" + l.TTL.Duration.String() + ")"
	}
	return failed(StepCancel, v1alpha1.FailureLeaseLapsed, ReasonLeaseLapsed, msg+"; the task was cancelled")
}

// RecordLapse keeps when the lapse was seen, so the cancel goes on however
// the agent answers meanwhile.
func RecordLapse(st *v1alpha1.DelegationStatus, now time.Time) {
	if l := st.Lease; l != nil && l.LapsedAt == nil {
		at := metav1.NewTime(now)
		l.LapsedAt = &at
	}
}

// CancelUnconfirmed is the record of an attempt whose lease lapsed but
// whose cancel the agent never confirmed: it ends the Delegation (the task
// may still run, so no attempt follows).
func CancelUnconfirmed(rec Record) Record {
	rec.Outcome.Reason = ReasonCancelUnconfirmed
	return rec
}

// UntilLapse is how long until a followed task's lease lapses under a
// policy that retries LeaseLapsed (0: no such lapse to wait for). A read
// the agent did not answer waits that long for the next pass: unanswered
// reads that repeat themselves wake nothing.
func UntilLapse(o Observation) time.Duration {
	at := LeaseLapsesAt(o)
	if at.IsZero() || o.Retry == nil || !Retries(o.Retry, v1alpha1.FailureLeaseLapsed) {
		return 0
	}
	return max(at.Sub(o.Now)+10*time.Millisecond, time.Millisecond)
}
