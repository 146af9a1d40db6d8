/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

func policy(maxAttempts int32, on ...v1alpha1.RetryClass) *v1alpha1.RetryPolicy {
	return &v1alpha1.RetryPolicy{MaxAttempts: maxAttempts, On: on,
		Backoff: &v1alpha1.Backoff{Initial: &metav1.Duration{Duration: 10 * time.Second}}}
}

// retrying is attempt n of a task under p, running as task-n.
func retrying(p *v1alpha1.RetryPolicy, n int32) change {
	return func(o *Observation) {
		o.Retry = p
		o.Status.Phase, o.Status.TaskID = v1alpha1.PhaseRunning, fmt.Sprintf("task-%d", n)
		o.Status.Attempt, o.Status.MaxAttempts = n, p.MaxAttempts
		start := metav1.NewTime(now.Add(-time.Minute))
		o.Status.StartTime, o.Status.SendStarted = &start, &start
	}
}

func granted(tokens, reported int64) change {
	return func(o *Observation) {
		o.Status.Budget = &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": tokens}, Reported: v1alpha1.Meters{"tokens": reported}}
		Recompute(o.Status.Budget)
	}
}

func deadlineIn(d time.Duration) change {
	return func(o *Observation) {
		t := metav1.NewTime(now.Add(d))
		o.Status.Deadline = &t
	}
}

func remoteFailed(class v1alpha1.FailureClass) Record {
	return Record{Phase: v1alpha1.PhaseFailed, Outcome: v1alpha1.Outcome{Reason: ReasonRemoteFailed, FailureClass: class, Message: "busy"}}
}

func TestAfterAttempt(t *testing.T) {
	sendUnknown := SendOutcomeUnknown("lost")
	completed := Record{Phase: v1alpha1.PhaseSucceeded, Outcome: v1alpha1.Outcome{Reason: ReasonCompleted}}
	cases := []struct {
		name    string
		o       Observation
		rec     Record
		again   bool
		reason  string
		class   v1alpha1.FailureClass
		message string
	}{
		{"no policy: the failure is final", observe(following(v1alpha1.PhaseRunning)), remoteFailed(v1alpha1.FailureTransient),
			false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"a transient failure with attempts left is retried after the backoff", observe(retrying(policy(3), 1)),
			remoteFailed(v1alpha1.FailureTransient), true, ReasonRetryScheduled, "", "attempt 2/3 at 2026-11-29T20:00:10Z"},
		{"an empty on[] retries Unreachable", observe(retrying(policy(3), 1)),
			Record{Phase: v1alpha1.PhaseFailed, Outcome: v1alpha1.Outcome{Reason: ReasonUnreachable, FailureClass: v1alpha1.FailureUnreachable}},
			true, ReasonRetryScheduled, "", "attempt 1/3 failed (Unreachable)"},
		{"a class not in on[] is final", observe(retrying(policy(3, "Rejected"), 1)), remoteFailed(v1alpha1.FailureTransient),
			false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"an InvalidRequest is never retried by default", observe(retrying(policy(3), 1)), remoteFailed(v1alpha1.FailureInvalidRequest),
			false, ReasonRemoteFailed, v1alpha1.FailureInvalidRequest, "busy"},
		{"the last attempt's failure is final and says so", observe(retrying(policy(3), 3)), remoteFailed(v1alpha1.FailureTransient),
			false, ReasonRemoteFailed, v1alpha1.FailureTransient, "attempt 3/3: busy"},
		{"a send that may still run is never retried (never two attempts alive)", observe(retrying(policy(3, "Unreachable"), 1)), sendUnknown,
			false, ReasonSendOutcomeUnknown, v1alpha1.FailureUnreachable, "lost"},
		{"a refused send is retried", observe(retrying(policy(3, "Rejected"), 1)),
			SendRefused(string(v1alpha1.FailureRejected), "503"), true, ReasonRetryScheduled, "", "attempt 2/3"},
		{"a lost task is retried (the agent no longer holds it)", observe(retrying(policy(2, "Internal"), 1)), Lost(),
			true, ReasonRetryScheduled, "", "attempt 2/2"},
		{"spec.cancel stops retries", observe(retrying(policy(3), 1), cancelInSpec), remoteFailed(v1alpha1.FailureTransient),
			false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"a deleting parent stops retries", observe(retrying(policy(3), 1), withParent(Parent{Found: true, Deleting: true, Owns: true, Phase: v1alpha1.PhaseRunning})),
			remoteFailed(v1alpha1.FailureTransient), false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"an ended parent stops retries", observe(retrying(policy(3), 1), withParent(Parent{Found: true, Phase: v1alpha1.PhaseSucceeded})),
			remoteFailed(v1alpha1.FailureTransient), false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"a running parent lets the retry go", observe(retrying(policy(3), 1), withParent(Parent{Found: true, Owns: true, Phase: v1alpha1.PhaseRunning})),
			remoteFailed(v1alpha1.FailureTransient), true, ReasonRetryScheduled, "", "attempt 2/3"},
		{"nothing left of the grant: RetryBudgetExhausted", observe(retrying(policy(3), 1), granted(100, 100)),
			remoteFailed(v1alpha1.FailureTransient), false, ReasonRetryBudgetExhausted, v1alpha1.FailureBudgetExhausted, "tokens: 0 of 100 left"},
		{"some of the grant left: retried", observe(retrying(policy(3), 1), granted(100, 40)),
			remoteFailed(v1alpha1.FailureTransient), true, ReasonRetryScheduled, "", "attempt 2/3"},
		{"a lost task without a report counts all it was granted", observe(retrying(policy(3, "Internal"), 1), granted(100, 10)),
			Lost(), false, ReasonRetryBudgetExhausted, v1alpha1.FailureBudgetExhausted, "tokens: 0 of 100 left"},
		{"a retry due after the deadline: DeadlineExceeded", observe(retrying(policy(3), 1), deadlineIn(5*time.Second)),
			remoteFailed(v1alpha1.FailureTransient), false, ReasonDeadline, v1alpha1.FailureBudgetExhausted, "would start at 2026-11-29T20:00:10Z"},
		{"a retry due after the parent's deadline: DeadlineExceeded", observe(retrying(policy(3), 1),
			withParent(Parent{Found: true, Owns: true, Phase: v1alpha1.PhaseRunning, Deadline: now.Add(time.Second)})),
			remoteFailed(v1alpha1.FailureTransient), false, ReasonDeadline, v1alpha1.FailureBudgetExhausted, "not before the deadline"},
		{"a retry due before the deadline goes", observe(retrying(policy(3), 1), deadlineIn(time.Minute)),
			remoteFailed(v1alpha1.FailureTransient), true, ReasonRetryScheduled, "", "attempt 2/3"},
		{"an adopted task is never sent again", observe(retrying(policy(3), 1), adopting), remoteFailed(v1alpha1.FailureTransient),
			false, ReasonRemoteFailed, v1alpha1.FailureTransient, "busy"},
		{"a success ends the attempts", observe(retrying(policy(3), 2)), completed, false, ReasonCompleted, "", ""},
		{"a lapsed lease whose cancel was confirmed is retried", observe(retrying(policy(3, "LeaseLapsed"), 1)),
			LeaseLapse(observe()).Record(), true, ReasonRetryScheduled, "", "attempt 1/3 failed (LeaseLapsed)"},
		{"a lapsed lease whose cancel was never confirmed is final (the task may run)", observe(retrying(policy(3, "LeaseLapsed"), 1)),
			CancelUnconfirmed(LeaseLapse(observe()).Record()), false, ReasonCancelUnconfirmed, v1alpha1.FailureLeaseLapsed, "lease lapsed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			r := AfterAttempt(c.o, c.rec)
			g.Expect(r.Again).To(Equal(c.again))
			g.Expect(r.Record.Outcome.Reason).To(Equal(c.reason))
			g.Expect(r.Record.Outcome.FailureClass).To(Equal(c.class))
			g.Expect(r.Record.Outcome.Message).To(ContainSubstring(c.message))
			if c.again {
				g.Expect(r.Record.Phase).To(Equal(v1alpha1.PhaseRunning))
				g.Expect(r.At).To(Equal(now.Add(10 * time.Second)))
			}
			if c.o.Status.Attempt > 0 {
				g.Expect(r.Ended.Attempt).To(Equal(c.o.Status.Attempt))
				g.Expect(r.Ended.TaskID).To(Equal(c.o.Status.TaskID))
				g.Expect(r.Ended.Outcome.Reason).To(Equal(c.rec.Outcome.Reason))
			} else {
				g.Expect(r.Ended.Attempt).To(BeZero(), "no history without a policy")
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	g := NewWithT(t)
	sec := func(n int) *metav1.Duration { return &metav1.Duration{Duration: time.Duration(n) * time.Second} }
	three := int32(3)
	p := &v1alpha1.RetryPolicy{MaxAttempts: 10, Backoff: &v1alpha1.Backoff{Initial: sec(2), Max: sec(30), Factor: &three}}
	var got []time.Duration
	for k := int32(1); k <= 5; k++ {
		got = append(got, Backoff(p, k))
	}
	g.Expect(got).To(Equal([]time.Duration{2 * time.Second, 6 * time.Second, 18 * time.Second, 30 * time.Second, 30 * time.Second}))
	g.Expect(Backoff(&v1alpha1.RetryPolicy{MaxAttempts: 3}, 1)).To(Equal(time.Second), "default initial")
	g.Expect(Backoff(&v1alpha1.RetryPolicy{MaxAttempts: 3}, 4)).To(Equal(8*time.Second), "default factor 2")
	g.Expect(Backoff(&v1alpha1.RetryPolicy{MaxAttempts: 10}, 10)).To(Equal(DefaultBackoffMax), "default max caps the wait")
}

func TestRetryPolicyInherited(t *testing.T) {
	g := NewWithT(t)
	own, groups := policy(2), policy(3)
	group := &v1alpha1.DelegationSpec{Retry: groups}
	task := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}, Retry: groups}
	plainGroup := &v1alpha1.DelegationSpec{ParentRef: &v1alpha1.LocalRef{Name: "root"}}
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{Retry: own}, group)).To(BeIdenticalTo(own), "a child's own policy wins")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, group)).To(BeIdenticalTo(groups), "a group's children inherit its policy")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, plainGroup, plainGroup, group)).To(BeIdenticalTo(groups),
		"through groups without a policy, from the nearest group with one")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, &v1alpha1.DelegationSpec{Retry: own}, group)).To(BeIdenticalTo(own),
		"the nearest group's policy wins")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, task)).To(BeNil(), "a task's policy is its own")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}}, group)).To(BeNil(),
		"a task's children do not inherit through it")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{}, plainGroup)).To(BeNil(), "no group with a policy: no retry")
	g.Expect(RetryPolicy(&v1alpha1.DelegationSpec{})).To(BeNil(), "default: no retry")
	g.Expect(InheritsFurther(plainGroup)).To(BeTrue())
	g.Expect(InheritsFurther(group)).To(BeFalse(), "a group with a policy ends the walk")
	g.Expect(InheritsFurther(&v1alpha1.DelegationSpec{})).To(BeFalse(), "a root group ends the walk")
}

// The whole cycle on status: an attempt ends, its spend moves to the
// ledger, the next one waits for its backoff, then starts afresh; the
// charge at the end holds every attempt's spend once.
func TestRetryCycle(t *testing.T) {
	g := NewWithT(t)
	p := policy(3)
	o := observe(retrying(p, 1), granted(100, 30))
	o.Status.Lease = &v1alpha1.LeaseStatus{Granted: true}
	r := AfterAttempt(o, remoteFailed(v1alpha1.FailureTransient))
	g.Expect(r.Again).To(BeTrue())
	RecordAttempt(o.Status, r.Ended)
	RecordAttempt(o.Status, r.Ended) // a pass applied again changes nothing
	NextAttempt(o.Status)
	st := o.Status
	g.Expect(st.Attempt).To(Equal(int32(2)))
	g.Expect(st.Attempts).To(HaveLen(1))
	g.Expect(st.Attempts[0].Spent).To(Equal(v1alpha1.Meters{"tokens": 30}))
	g.Expect(st.TaskID).To(BeEmpty())
	g.Expect(st.SendStarted).To(BeNil())
	g.Expect(st.Lease).To(BeNil(), "the next attempt's lease is its own")
	g.Expect(st.StartTime).NotTo(BeNil(), "the start, and the deadline from it, stay")
	g.Expect(st.Budget.Spent).To(Equal(v1alpha1.Meters{"tokens": 30}))
	g.Expect(AttemptGrant(st.Budget)).To(Equal(v1alpha1.Meters{"tokens": 70}), "the next attempt is offered what is left")
	g.Expect(Accounted(st)).To(BeTrue(), "an attempt not yet sent has spent nothing")

	step := Gate(o)
	g.Expect(step.Kind).To(Equal(StepBackoff))
	g.Expect(step.At).To(Equal(now.Add(10 * time.Second)))
	g.Expect(step.Outcome.Reason).To(Equal(ReasonRetryScheduled))
	o.Now = now.Add(10 * time.Second)
	g.Expect(Gate(o).Kind).To(Equal(StepStart), "due: the next attempt is sent")
	o.Now = now.Add(5 * time.Second)
	o.Spec.Cancel = true
	g.Expect(Gate(o).Kind).To(Equal(StepCancel), "a cancel ends the backoff")
	o.Spec.Cancel = false
	o.Parent = &Parent{Found: true, Deleting: true, Owns: true, Phase: v1alpha1.PhaseRunning}
	g.Expect(Gate(o).Outcome.Reason).To(Equal(ReasonParentDeleted), "a deleting parent ends the backoff")
	o.Parent = nil

	// Attempt 2 is sent, reports 50 and succeeds.
	sent := metav1.NewTime(now.Add(10 * time.Second))
	st.SendStarted, st.TaskID = &sent, "task-2"
	g.Expect(Accounted(st)).To(BeFalse(), "a running attempt's spend is not known yet")
	st.Budget.Reported = v1alpha1.Meters{"tokens": 50}
	Recompute(st.Budget)
	done := AfterAttempt(o, Record{Phase: v1alpha1.PhaseSucceeded, Outcome: v1alpha1.Outcome{Reason: ReasonCompleted}})
	RecordAttempt(st, done.Ended)
	st.Phase, st.Outcome = done.Record.Phase, &done.Record.Outcome
	g.Expect(st.Attempts).To(HaveLen(2))
	g.Expect(st.Attempts[1].TaskID).To(Equal("task-2"))
	g.Expect(st.Attempts[1].StartTime.Time).To(Equal(sent.Time))
	g.Expect(Charge(o.Spec, st, v1alpha1.Meters{"tokens": 100})).To(Equal(v1alpha1.Meters{"tokens": 80}),
		"the parent is charged each attempt's report once")
}

func TestAttemptIDs(t *testing.T) {
	g := NewWithT(t)
	uid := "0b6f3b8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
	g.Expect(AttemptMessageID(uid, 1)).To(Equal(MessageID(uid, -1)), "the first attempt keeps the first message's id")
	g.Expect(AttemptMessageID(uid, 2)).To(Equal("tether-" + uid + "-2"))
	g.Expect(SenderUID(AttemptMessageID(uid, 3))).To(Equal(uid), "an attempt's id names its Delegation")
	first := &a2a.Task{ID: "t1", MessageIDs: []string{AttemptMessageID(uid, 1)}}
	second := &a2a.Task{ID: "t2", MessageIDs: []string{AttemptMessageID(uid, 2)}}
	got, err := OwnAttemptTask([]*a2a.Task{first, second}, uid, 2, []string{"t1"}, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeIdenticalTo(second), "a later attempt's look-up finds its own task, not an earlier one")
	got, err = OwnAttemptTask([]*a2a.Task{first}, uid, 2, []string{"t1"}, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeNil(), "only an earlier attempt's task: the attempt never started")
	bare1, bare2 := &a2a.Task{ID: "t1"}, &a2a.Task{ID: "t2"}
	got, err = OwnAttemptTask([]*a2a.Task{bare1, bare2}, uid, 2, []string{"t1"}, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeIdenticalTo(bare2), "without history, the earlier attempts' tasks are set aside")
	_, err = OwnAttemptTask([]*a2a.Task{bare1, bare2, {ID: "t3"}}, uid, 2, []string{"t1"}, false)
	g.Expect(err).To(MatchError(ErrAmbiguousContext))
}

func TestRetryScheduledConditions(t *testing.T) {
	g := NewWithT(t)
	d := &v1alpha1.Delegation{Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning,
		Outcome: &v1alpha1.Outcome{Reason: ReasonRetryScheduled, Message: "attempt 2/3 at 2026-11-29T20:00:10Z"}}}
	SetConditions(d, now)
	for _, c := range d.Status.Conditions {
		if c.Type == ConditionReconciling {
			g.Expect(string(c.Status)).To(Equal("True"))
			g.Expect(c.Reason).To(Equal(ReasonRetryScheduled))
			g.Expect(strings.Contains(c.Message, "attempt 2/3")).To(BeTrue())
		}
	}
}

// leased is a followed task whose agent granted a lease of ttl and last
// answered for it at renewed.
func leased(ttl time.Duration, renewed time.Time) change {
	return func(o *Observation) {
		o.Status.Lease = &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: ttl}, Granted: true}
		o.LeaseRenewed = renewed
	}
}

func TestLeaseLapseEndsTheAttemptUnderAPolicyThatRetriesIt(t *testing.T) {
	lapses := policy(3, "LeaseLapsed")
	lapsedAt := func(o *Observation) { at := metav1.NewTime(now.Add(-time.Second)); o.Status.Lease.LapsedAt = &at }
	cases := []struct {
		name  string
		o     Observation
		lapse bool
	}{
		{"no answer for a whole ttl: the task is cancelled first", observe(retrying(lapses, 1), leased(9*time.Second, now.Add(-9*time.Second))), true},
		{"an answer within the ttl: followed", observe(retrying(lapses, 1), leased(9*time.Second, now.Add(-8*time.Second))), false},
		{"a policy that does not retry LeaseLapsed: followed (the agent ends its task)",
			observe(retrying(policy(3), 1), leased(9*time.Second, now.Add(-time.Minute))), false},
		{"no policy: followed", observe(following(v1alpha1.PhaseRunning), leased(9*time.Second, now.Add(-time.Minute))), false},
		{"no answer seen yet (not followed here): followed", observe(retrying(lapses, 1), leased(9*time.Second, time.Time{})), false},
		{"a lapse once recorded stays, whatever the agent answers since",
			observe(retrying(lapses, 1), leased(9*time.Second, now), lapsedAt), true},
		{"no lease granted: nothing lapses", observe(retrying(lapses, 1), leased(9*time.Second, now.Add(-time.Minute)),
			func(o *Observation) { o.Status.Lease.Granted = false }), false},
		{"spec.cancel goes first", observe(retrying(lapses, 1), leased(9*time.Second, now.Add(-time.Minute)), cancelInSpec), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			step := Gate(c.o)
			if !c.lapse {
				g.Expect(step.Outcome.Reason).NotTo(Equal(ReasonLeaseLapsed))
				return
			}
			g.Expect(step.Kind).To(Equal(StepCancel))
			g.Expect(step.Phase).To(Equal(v1alpha1.PhaseFailed))
			g.Expect(step.Outcome.FailureClass).To(Equal(v1alpha1.FailureLeaseLapsed))
			g.Expect(step.Outcome.Message).To(ContainSubstring("(9s)"))
		})
	}
}

func TestUntilLapse(t *testing.T) {
	g := NewWithT(t)
	o := observe(retrying(policy(3, "LeaseLapsed"), 1), leased(9*time.Second, now.Add(-3*time.Second)))
	g.Expect(UntilLapse(o)).To(Equal(6*time.Second + 10*time.Millisecond))
	o.Retry = policy(3)
	g.Expect(UntilLapse(o)).To(BeZero(), "LeaseLapsed not retried: nothing to wait for")
	st := &v1alpha1.DelegationStatus{Lease: &v1alpha1.LeaseStatus{Granted: true}}
	RecordLapse(st, now)
	RecordLapse(st, now.Add(time.Minute))
	g.Expect(st.Lease.LapsedAt.Time).To(Equal(now), "the first lapse seen is kept")
}
