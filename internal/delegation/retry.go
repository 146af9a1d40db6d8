/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Retries (spec.retry). An attempt is one A2A task; a failed one is made
// again as a new task, with its own message id, in the same context, only
// when the last one is known to have ended at the agent or never to have
// started: never two attempts alive. All attempts share the Delegation's
// grant and deadline, and the tree's end stops them.

const (
	// ReasonRetryScheduled: an attempt failed and the next one waits for
	// its backoff (phase Running; the message says when).
	ReasonRetryScheduled = "RetryScheduled"
	// ReasonRetryBudgetExhausted: an attempt failed and what is left of the
	// grant cannot cover another one.
	ReasonRetryBudgetExhausted = "RetryBudgetExhausted"
)

// Backoff defaults, for a policy that leaves them out.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	DefaultBackoffFactor  = 2
)

// RetryPolicy is the policy in force for a Delegation: its own spec.retry,
// else the nearest one up its chain of groups. groups are the specs above
// it, its parent first; the walk stops at the first that is not a group (a
// task's policy is its own) and at the end of the list (none: no retry).
func RetryPolicy(spec *v1alpha1.DelegationSpec, groups ...*v1alpha1.DelegationSpec) *v1alpha1.RetryPolicy {
	if spec.Retry != nil {
		return spec.Retry
	}
	for _, g := range groups {
		switch {
		case g == nil || !IsGroup(g):
			return nil
		case g.Retry != nil:
			return g.Retry
		}
	}
	return nil
}

// InheritsFurther reports whether a Delegation under spec, with no policy
// of its own, would find its retry policy above spec: spec is a group
// without one, under a parent.
func InheritsFurther(spec *v1alpha1.DelegationSpec) bool {
	return IsGroup(spec) && spec.Retry == nil && spec.ParentRef != nil
}

// Backoff is the wait before retry k (k = 1 for the first retry):
// initial × factor^(k-1), at most max.
func Backoff(p *v1alpha1.RetryPolicy, k int32) time.Duration {
	initial, maxWait, factor := DefaultBackoffInitial, DefaultBackoffMax, int64(DefaultBackoffFactor)
	if b := p.Backoff; b != nil {
		if b.Initial != nil {
			initial = b.Initial.Duration
		}
		if b.Max != nil {
			maxWait = b.Max.Duration
		}
		if b.Factor != nil {
			factor = int64(*b.Factor)
		}
	}
	wait := initial
	for i := int32(1); i < k && wait < maxWait; i++ {
		wait = time.Duration(min(int64(wait)*factor, int64(maxWait)))
	}
	return min(wait, maxWait)
}

// Retries reports whether the policy retries a failure of class c.
func Retries(p *v1alpha1.RetryPolicy, c v1alpha1.FailureClass) bool {
	if len(p.On) == 0 {
		return c == v1alpha1.FailureTransient || c == v1alpha1.FailureUnreachable
	}
	return slices.Contains(p.On, v1alpha1.RetryClass(c))
}

// AttemptOf is the number of the current attempt (1 without a policy).
func AttemptOf(st *v1alpha1.DelegationStatus) int32 { return max(st.Attempt, 1) }

// AttemptMessageID is the id of an attempt's first message: the first
// attempt's is MessageID's, a later one's names the attempt.
func AttemptMessageID(uid string, attempt int32) string {
	if attempt <= 1 {
		return MessageID(uid, -1)
	}
	return MessageID(uid, -1) + "-" + strconv.Itoa(int(attempt))
}

// StartAttempts numbers the first attempt when a policy is in force, with
// the policy's maxAttempts, as the task starts.
func StartAttempts(st *v1alpha1.DelegationStatus, p *v1alpha1.RetryPolicy) {
	if p == nil || st.Attempt > 0 {
		return
	}
	st.Attempt, st.MaxAttempts = 1, p.MaxAttempts
}

// Retry is what AfterAttempt decides about an attempt that failed.
type Retry struct {
	// Again: the next attempt is made at At; Record shows the wait.
	// Otherwise Record is the Delegation's final record.
	Again  bool
	At     time.Time
	Record Record
	// Ended is the attempt's entry for status.attempts (Attempt 0: the
	// Delegation runs without a policy and keeps no history).
	Ended v1alpha1.Attempt
}

// AfterAttempt decides after an attempt failed (rec, a Failed record)
// whether another attempt is made, when, or why not. A new attempt needs
// a policy that retries the failure's class, an attempt left, an attempt
// known not to be alive (it ended at the agent, the agent refused it or
// no longer knows it), a tree that still runs, something left of every
// meter granted, and a start before the deadline.
func AfterAttempt(o Observation, rec Record) Retry {
	st, p := o.Status, o.Retry
	out := Retry{Record: rec}
	if st.Attempt > 0 {
		out.Ended = EndedAttempt(st, rec, o.Now)
	}
	if p == nil || rec.Phase != v1alpha1.PhaseFailed || o.Spec.TaskID != "" || o.Spec.Message == nil {
		return out
	}
	n, maxAttempts := AttemptOf(st), maxAttemptsOf(st, p)
	class := rec.Outcome.FailureClass
	switch {
	case !Retries(p, class), !endedForSure(rec.Outcome.Reason):
		return out
	case n >= maxAttempts:
		if maxAttempts > 1 {
			out.Record.Outcome.Message = fmt.Sprintf("attempt %d/%d: %s", n, maxAttempts, rec.Outcome.Message)
		}
		return out
	case treeEnded(o):
		return out
	}
	what := fmt.Sprintf("attempt %d/%d failed (%s): %s", n, maxAttempts, class, rec.Outcome.Message)
	if b := st.Budget; b != nil && len(b.Granted) > 0 {
		after := b.DeepCopy()
		after.EndedAttempts = addMeters(after.EndedAttempts, out.Ended.Spent)
		after.Reported = nil
		Recompute(after)
		if short := exhausted(after); short != "" {
			out.Record = failed(StepSettle, v1alpha1.FailureBudgetExhausted, ReasonRetryBudgetExhausted,
				what+"; no attempt is left in the grant ("+short+")").Record()
			return out
		}
	}
	at := o.Now.Truncate(time.Second).Add(Backoff(p, n))
	if dl := earliestDeadline(o); !dl.IsZero() && !at.Before(dl) {
		out.Record = failed(StepSettle, v1alpha1.FailureBudgetExhausted, ReasonDeadline,
			fmt.Sprintf("%s; attempt %d would start at %s, not before the deadline %s", what, n+1, stamp(at), stamp(dl))).Record()
		return out
	}
	out.Again, out.At = true, at
	out.Record = Progress(v1alpha1.PhaseRunning, ReasonRetryScheduled,
		fmt.Sprintf("%s; attempt %d/%d at %s", what, n+1, maxAttempts, stamp(at)))
	return out
}

func maxAttemptsOf(st *v1alpha1.DelegationStatus, p *v1alpha1.RetryPolicy) int32 {
	if st.MaxAttempts > 0 {
		return st.MaxAttempts
	}
	return p.MaxAttempts
}

// endedForSure: the failure proves the attempt no longer runs at the agent
// (it ended there, the agent refused it or no longer knows it, or a
// look-up proved it never started). A send whose outcome is unknown may
// still run: it is never retried.
func endedForSure(reason string) bool {
	switch reason {
	case ReasonRemoteFailed, ReasonRemoteRejected, ReasonSendRefused, ReasonTaskLost, ReasonUnreachable, ReasonLeaseLapsed:
		return true
	}
	return false
}

// treeEnded: the Delegation was cancelled, or its parent is going, gone or
// ended: no new attempt starts.
func treeEnded(o Observation) bool {
	if o.Spec.Cancel {
		return true
	}
	p := o.Parent
	return p != nil && o.Spec.ParentClosePolicy != v1alpha1.ParentClosePolicyDetach && (!p.Found || p.Deleting || Settled(p.Phase))
}

func earliestDeadline(o Observation) time.Time {
	var dl time.Time
	if o.Status.Deadline != nil {
		dl = o.Status.Deadline.Time
	}
	if p := o.Parent; p != nil && !p.Deadline.IsZero() && o.Spec.ParentClosePolicy != v1alpha1.ParentClosePolicyDetach &&
		(dl.IsZero() || p.Deadline.Before(dl)) {
		dl = p.Deadline
	}
	return dl
}

// exhausted names the granted meters nothing is left of ("" when every
// one has some left).
func exhausted(b *v1alpha1.BudgetStatus) string {
	short := ""
	for _, m := range slices.Sorted(maps.Keys(b.Granted)) {
		if b.Granted[m] > 0 && b.Left[m] <= 0 {
			if short != "" {
				short += ", "
			}
			short += fmt.Sprintf("%s: %d of %d left", m, max(b.Left[m], 0), b.Granted[m])
		}
	}
	return short
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// EndedAttempt is the entry of the current attempt, ended with rec.
func EndedAttempt(st *v1alpha1.DelegationStatus, rec Record, now time.Time) v1alpha1.Attempt {
	ended := metav1.NewTime(now.Truncate(time.Second))
	a := v1alpha1.Attempt{Attempt: AttemptOf(st), TaskID: st.TaskID, CompletionTime: &ended, Spent: AttemptSpend(st, rec)}
	switch {
	case st.SendStarted != nil:
		a.StartTime = st.SendStarted.DeepCopy()
	case st.StartTime != nil && a.Attempt == 1:
		a.StartTime = st.StartTime.DeepCopy()
	}
	out := rec.Outcome
	if len(out.Message) > maxAttemptMessage {
		out.Message = out.Message[:maxAttemptMessage]
	}
	a.Outcome = &out
	return a
}

// maxAttemptMessage bounds an attempt's message in status (ten attempts
// stay well inside an object's size).
const maxAttemptMessage = 512

// AttemptSpend is what an attempt that ended with rec counts against the
// grant: nothing for a send the agent refused or that provably never
// arrived, its agent's report when it ended at the agent with one, and
// everything that was left to it otherwise (as a parent keeps the whole
// reservation of a child whose spend it cannot know).
func AttemptSpend(st *v1alpha1.DelegationStatus, rec Record) v1alpha1.Meters {
	b := st.Budget
	switch reason := rec.Outcome.Reason; {
	case b == nil || len(b.Granted) == 0, reason == ReasonSendRefused, reason == ReasonUnreachable:
		return nil
	case settledAtAgent(reason) && b.Reported != nil:
		return maps.Clone(b.Reported)
	}
	return AttemptGrant(b)
}

// AttemptGrant is what the current attempt is granted: the grant less
// what the ended attempts counted. It is what its send offers the agent
// and what its report is clamped to.
func AttemptGrant(b *v1alpha1.BudgetStatus) v1alpha1.Meters {
	if b == nil || b.Granted == nil {
		return nil
	}
	g := v1alpha1.Meters{}
	for m, n := range b.Granted {
		g[m] = max(subSat(n, b.EndedAttempts[m]), 0)
	}
	return g
}

// RecordAttempt keeps an ended attempt's entry (once; at most MaxAttempts)
// and moves its spend from reported to endedAttempts.
func RecordAttempt(st *v1alpha1.DelegationStatus, a v1alpha1.Attempt) {
	if a.Attempt == 0 || slices.ContainsFunc(st.Attempts, func(e v1alpha1.Attempt) bool { return e.Attempt == a.Attempt }) {
		return
	}
	if len(st.Attempts) >= v1alpha1.MaxAttempts {
		st.Attempts = st.Attempts[1:]
	}
	st.Attempts = append(st.Attempts, a)
	if b := st.Budget; b != nil {
		b.EndedAttempts = addMeters(b.EndedAttempts, a.Spent)
		b.Reported = nil
		Recompute(b)
	}
}

// NextAttempt makes the Delegation wait for its next attempt: the ended
// attempt's task is let go (its id stays in status.attempts), the context,
// start time, deadline and ledger stay.
func NextAttempt(st *v1alpha1.DelegationStatus) {
	st.Attempt = AttemptOf(st) + 1
	st.TaskID, st.RemoteState, st.SendResult = "", "", ""
	st.SendStarted, st.SendDeadline, st.CancelRequested = nil, nil, nil
	st.Result, st.Lease, st.ReplyInFlight = nil, nil, false
}

// RetryWait says whether a scheduled attempt is not due yet, and when it is.
func RetryWait(o Observation) (at time.Time, waiting bool) {
	st := o.Status
	if o.Retry == nil || st.Attempt < 2 || Started(st) || len(st.Attempts) == 0 {
		return time.Time{}, false
	}
	last := st.Attempts[len(st.Attempts)-1]
	if last.Attempt != st.Attempt-1 || last.CompletionTime == nil {
		return time.Time{}, false
	}
	at = last.CompletionTime.Add(Backoff(o.Retry, last.Attempt))
	return at, o.Now.Before(at)
}

// Accounted: every attempt that may have spent something is in
// status.attempts (the current one ended, or has not been sent), so the
// ledger holds the whole spend.
func Accounted(st *v1alpha1.DelegationStatus) bool {
	if st.Attempt == 0 {
		return false
	}
	if n := len(st.Attempts); n > 0 && st.Attempts[n-1].Attempt == st.Attempt {
		return true
	}
	return st.Attempt > 1 && !Started(st)
}

func addMeters(a, b v1alpha1.Meters) v1alpha1.Meters {
	if len(b) == 0 {
		return a
	}
	out := maps.Clone(a)
	if out == nil {
		out = v1alpha1.Meters{}
	}
	for m, n := range b {
		out[m] = addSat(out[m], n)
	}
	return out
}
