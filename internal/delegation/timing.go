/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// Deadline is the earliest of the own timeout, the budget's timeout or
// deadline, and the parent's deadline, counted from start. Zero means none.
func Deadline(spec *v1alpha1.DelegationSpec, parentDeadline, start time.Time) time.Time {
	var d time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if spec.Timeout != nil {
		earliest(start.Add(spec.Timeout.Duration))
	}
	if b := spec.Budget; b != nil {
		if b.Timeout != nil {
			earliest(start.Add(b.Timeout.Duration))
		}
		if b.Deadline != nil {
			earliest(b.Deadline.Time)
		}
	}
	// A Detach child outlives its parent, so the parent's time does not bound it.
	if spec.ParentClosePolicy != v1alpha1.ParentClosePolicyDetach {
		earliest(parentDeadline)
	}
	return d
}

// RenewInterval is how often a leased task is read back with the lease
// extension: a third of the TTL, so two renewals may fail before it lapses.
func RenewInterval(spec *v1alpha1.DelegationSpec) time.Duration {
	if spec.Lease == nil {
		return 0
	}
	return spec.Lease.TTL.Duration / 3
}

// NextDeadline is when the Delegation's own or its parent's deadline falls
// due (just after, so the pass sees it passed); 0 when none is ahead. A
// followed task needs no other timer: renewals and polls are the
// scheduler's, and cost no reconcile.
func NextDeadline(o Observation) time.Duration {
	var next time.Duration
	sooner := func(deadline time.Time) {
		if d := deadline.Sub(o.Now) + 10*time.Millisecond; d > 0 && (next <= 0 || d < next) {
			next = d
		}
	}
	if o.Status.Deadline != nil {
		sooner(o.Status.Deadline.Time)
	}
	if o.Parent != nil && !o.Parent.Deadline.IsZero() {
		sooner(o.Parent.Deadline)
	}
	return next
}

// ExpiryAfterFinish says when a settled Delegation with
// ttlSecondsAfterFinished is due for deletion: delete now, or wait that long.
func ExpiryAfterFinish(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, now time.Time) (deleteNow bool, after time.Duration) {
	if spec.TTLSecondsAfterFinished == nil || !Settled(st.Phase) || st.CompletionTime == nil {
		return false, 0
	}
	due := st.CompletionTime.Add(time.Duration(*spec.TTLSecondsAfterFinished) * time.Second)
	if !now.Before(due) {
		return true, 0
	}
	return false, due.Sub(now)
}

// Count adds one child's phase to the counts a parent keeps. Children handed
// back for input are still active: their parent has not finished with them.
func Count(c *v1alpha1.ChildCounts, p v1alpha1.Phase) {
	switch p {
	case v1alpha1.PhaseSucceeded:
		c.Succeeded++
	case v1alpha1.PhaseFailed:
		c.Failed++
	case v1alpha1.PhaseCanceled, v1alpha1.PhaseDetached:
		c.Canceled++
	default:
		c.Active++
	}
}

// Ids derived from the Delegation's UID make a retried send recognisable.

// MessageID is the id of the first message (reply < 0) or of a reply.
func MessageID(uid string, reply int) string {
	if reply < 0 {
		return "tether-" + uid
	}
	return "tether-" + uid + "-reply-" + strconv.Itoa(reply)
}

// ContextID is the user's context id, or one derived from the UID.
func ContextID(spec *v1alpha1.DelegationSpec, uid string) string {
	if spec.Message != nil && spec.Message.ContextID != "" {
		return spec.Message.ContextID
	}
	return "tether-" + uid
}

// OwnTask picks, among the tasks of a context, the one this Delegation sent:
// the one whose history holds a message id derived from its UID. Agents that
// return no history leave only the context to go by, which is this
// Delegation's alone unless the user chose it (sharedContext).
func OwnTask(tasks []*a2a.Task, uid string, sharedContext bool) (*a2a.Task, error) {
	return OwnAttemptTask(tasks, uid, 1, nil, sharedContext)
}

// OwnAttemptTask is OwnTask for an attempt of a retried Delegation: a later
// attempt's task is the one holding that attempt's message id (earlier
// attempts' tasks share its context); without history, the tasks of the
// earlier attempts (their ids) are set aside and one task must be left.
func OwnAttemptTask(tasks []*a2a.Task, uid string, attempt int32, earlier []string, sharedContext bool) (*a2a.Task, error) {
	prefix, exact := MessageID(uid, -1), ""
	if attempt > 1 {
		exact = AttemptMessageID(uid, attempt)
	}
	withHistory := false
	var rest []*a2a.Task
	for _, t := range tasks {
		for _, id := range t.MessageIDs {
			withHistory = true
			if (exact == "" && strings.HasPrefix(id, prefix)) || (exact != "" && id == exact) {
				return t, nil
			}
		}
		if !slices.Contains(earlier, t.ID) {
			rest = append(rest, t)
		}
	}
	switch {
	case len(rest) == 0, withHistory:
		return nil, nil // none of them is ours: send
	case sharedContext, len(rest) > 1 && attempt > 1:
		return nil, ErrAmbiguousContext
	}
	return rest[0], nil
}

// ErrAmbiguousContext: a shared context holds tasks whose origin the agent
// does not tell; sending again could start ours twice, and adopting could
// take a sibling's.
var ErrAmbiguousContext = errors.New("the context holds tasks the agent does not say the origin of; cannot tell which one is ours")
