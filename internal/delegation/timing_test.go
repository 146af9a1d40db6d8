/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func at(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

func TestDeadline(t *testing.T) {
	start := now
	tests := []struct {
		name           string
		spec           v1alpha1.DelegationSpec
		parentDeadline time.Time
		want           time.Time
	}{
		{name: "no limit means no deadline", want: time.Time{}},
		{name: "the own timeout counts from start",
			spec: v1alpha1.DelegationSpec{Timeout: duration(10 * time.Minute)}, want: start.Add(10 * time.Minute)},
		{name: "the budget timeout counts from start",
			spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Timeout: duration(5 * time.Minute)}}, want: start.Add(5 * time.Minute)},
		{name: "the budget deadline is absolute",
			spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Deadline: at(now.Add(time.Hour))}}, want: now.Add(time.Hour)},
		{name: "a budget with meters only sets no deadline",
			spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 20000}}}, want: time.Time{}},
		{name: "the parent's deadline is inherited", parentDeadline: now.Add(3 * time.Minute), want: now.Add(3 * time.Minute)},
		{name: "the parent's deadline caps a longer own timeout",
			spec: v1alpha1.DelegationSpec{Timeout: duration(10 * time.Minute)}, parentDeadline: now.Add(3 * time.Minute),
			want: now.Add(3 * time.Minute)},
		{name: "a shorter own timeout comes before the parent's deadline",
			spec: v1alpha1.DelegationSpec{Timeout: duration(time.Minute)}, parentDeadline: now.Add(3 * time.Minute),
			want: now.Add(time.Minute)},
		{name: "a budget timeout shorter than the own timeout wins",
			spec: v1alpha1.DelegationSpec{Timeout: duration(10 * time.Minute), Budget: &v1alpha1.BudgetSpec{Timeout: duration(2 * time.Minute)}},
			want: start.Add(2 * time.Minute)},
		{name: "a budget deadline sooner than the own timeout wins",
			spec: v1alpha1.DelegationSpec{Timeout: duration(10 * time.Minute), Budget: &v1alpha1.BudgetSpec{Deadline: at(now.Add(4 * time.Minute))}},
			want: now.Add(4 * time.Minute)},
		{name: "the earliest of all four wins",
			spec: v1alpha1.DelegationSpec{Timeout: duration(10 * time.Minute),
				Budget: &v1alpha1.BudgetSpec{Timeout: duration(8 * time.Minute), Deadline: at(now.Add(6 * time.Minute))}},
			parentDeadline: now.Add(7 * time.Minute), want: now.Add(6 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Deadline(&tt.spec, tt.parentDeadline, start)).To(BeTemporally("==", tt.want))
		})
	}
}

func TestDeadlineOfADetachPolicyChildIgnoresTheParentDeadline(t *testing.T) {
	spec := v1alpha1.DelegationSpec{ParentClosePolicy: v1alpha1.ParentClosePolicyDetach, Timeout: duration(10 * time.Minute)}
	NewWithT(t).Expect(Deadline(&spec, now.Add(3*time.Minute), now)).To(BeTemporally("==", now.Add(10*time.Minute)))
}

func TestRenewInterval(t *testing.T) {
	tests := []struct {
		name  string
		lease *v1alpha1.LeaseSpec
		want  time.Duration
	}{
		{"no lease, no renewal", nil, 0},
		{"a third of the ttl", &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}}, 10 * time.Second},
		{"a third of the shortest ttl", &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: time.Second}}, time.Second / 3},
		{"a third of the longest ttl", &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: time.Hour}}, 20 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(RenewInterval(&v1alpha1.DelegationSpec{Lease: tt.lease})).To(Equal(tt.want))
		})
	}
}

func TestNextDeadline(t *testing.T) {
	const margin = 10 * time.Millisecond
	leased := func(o *Observation) {
		o.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}}
	}
	tests := []struct {
		name string
		obs  Observation
		want time.Duration
	}{
		{"a leased task without deadline needs no timer (the scheduler renews it)", observe(following(v1alpha1.PhaseRunning), leased), 0},
		{"an own deadline", observe(following(v1alpha1.PhaseRunning), leased, ownDeadline(now.Add(time.Minute))), time.Minute + margin},
		{"a parent's sooner deadline wins",
			observe(following(v1alpha1.PhaseRunning), ownDeadline(now.Add(7*time.Second)),
				withParent(Parent{Found: true, Phase: v1alpha1.PhaseRunning, Deadline: now.Add(6 * time.Second)})), 6*time.Second + margin},
		{"a deadline already passed is no timer", observe(following(v1alpha1.PhaseRunning), ownDeadline(now.Add(-time.Minute))), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(NextDeadline(tt.obs)).To(Equal(tt.want))
		})
	}
}

func TestExpiryAfterFinish(t *testing.T) {
	ttl := func(s int32) *int32 { return &s }
	finished := func(p v1alpha1.Phase, ago time.Duration) *v1alpha1.DelegationStatus {
		return &v1alpha1.DelegationStatus{Phase: p, CompletionTime: at(now.Add(-ago))}
	}
	tests := []struct {
		name      string
		ttl       *int32
		status    *v1alpha1.DelegationStatus
		deleteNow bool
		after     time.Duration
	}{
		{name: "without ttlSecondsAfterFinished nothing is deleted", status: finished(v1alpha1.PhaseSucceeded, time.Hour)},
		{name: "a running Delegation is not deleted", ttl: ttl(0), status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning}},
		{name: "a task waiting for input is not deleted", ttl: ttl(0),
			status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseInputRequired, CompletionTime: at(now.Add(-time.Hour))}},
		{name: "a settled Delegation without completion time is not deleted", ttl: ttl(0),
			status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseFailed}},
		{name: "a zero ttl deletes at once", ttl: ttl(0), status: finished(v1alpha1.PhaseSucceeded, 0), deleteNow: true},
		{name: "before the ttl ran out, wait the rest", ttl: ttl(60), status: finished(v1alpha1.PhaseFailed, 20*time.Second),
			after: 40 * time.Second},
		{name: "when the ttl runs out, delete", ttl: ttl(60), status: finished(v1alpha1.PhaseCanceled, time.Minute), deleteNow: true},
		{name: "after the ttl ran out, delete", ttl: ttl(60), status: finished(v1alpha1.PhaseDetached, time.Hour), deleteNow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			deleteNow, after := ExpiryAfterFinish(&v1alpha1.DelegationSpec{TTLSecondsAfterFinished: tt.ttl}, tt.status, now)
			g.Expect(deleteNow).To(Equal(tt.deleteNow), "delete now")
			g.Expect(after).To(Equal(tt.after), "after")
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		phase v1alpha1.Phase
		want  v1alpha1.ChildCounts
	}{
		{"", v1alpha1.ChildCounts{Active: 1}},
		{v1alpha1.PhasePending, v1alpha1.ChildCounts{Active: 1}},
		{v1alpha1.PhaseRunning, v1alpha1.ChildCounts{Active: 1}},
		{v1alpha1.PhaseInputRequired, v1alpha1.ChildCounts{Active: 1}},
		{v1alpha1.PhaseAuthRequired, v1alpha1.ChildCounts{Active: 1}},
		{v1alpha1.PhaseSucceeded, v1alpha1.ChildCounts{Succeeded: 1}},
		{v1alpha1.PhaseFailed, v1alpha1.ChildCounts{Failed: 1}},
		{v1alpha1.PhaseCanceled, v1alpha1.ChildCounts{Canceled: 1}},
		{v1alpha1.PhaseDetached, v1alpha1.ChildCounts{Canceled: 1}},
	}
	for _, tt := range tests {
		name := string(tt.phase)
		if name == "" {
			name = "no phase yet"
		}
		t.Run(name, func(t *testing.T) {
			var c v1alpha1.ChildCounts
			Count(&c, tt.phase)
			NewWithT(t).Expect(c).To(Equal(tt.want))
		})
	}
}

func TestCountAddsUp(t *testing.T) {
	var c v1alpha1.ChildCounts
	for _, p := range []v1alpha1.Phase{
		v1alpha1.PhaseRunning, v1alpha1.PhaseInputRequired, v1alpha1.PhaseSucceeded, v1alpha1.PhaseSucceeded,
		v1alpha1.PhaseFailed, v1alpha1.PhaseDetached, v1alpha1.PhaseCanceled,
	} {
		Count(&c, p)
	}
	NewWithT(t).Expect(c).To(Equal(v1alpha1.ChildCounts{Active: 2, Succeeded: 2, Failed: 1, Canceled: 2}))
}

func TestMessageID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MessageID("3f2a", -1)).To(Equal("tether-3f2a"), "first message")
	g.Expect(MessageID("3f2a", 0)).To(Equal("tether-3f2a-reply-0"), "first reply")
	g.Expect(MessageID("3f2a", 12)).To(Equal("tether-3f2a-reply-12"), "later reply")
	g.Expect(MessageID("3f2a", 0)).NotTo(Equal(MessageID("3f2a", -1)), "a reply never reuses the first message's id")
}

func TestContextID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ContextID(&v1alpha1.DelegationSpec{Message: &v1alpha1.Message{Text: "hi", ContextID: "case-42"}}, "3f2a")).
		To(Equal("case-42"), "the user's context id")
	g.Expect(ContextID(&v1alpha1.DelegationSpec{Message: &v1alpha1.Message{Text: "hi"}}, "3f2a")).
		To(Equal("tether-3f2a"), "derived when the message names none")
	g.Expect(ContextID(&v1alpha1.DelegationSpec{TaskID: "task-0"}, "3f2a")).
		To(Equal("tether-3f2a"), "derived when there is no message (adoption)")
}

func TestOwnTaskPicksTheTaskThisDelegationSent(t *testing.T) {
	uid := "u-1"
	mine := &a2a.Task{ID: "mine", MessageIDs: []string{MessageID(uid, -1), MessageID(uid, 0)}}
	mineByReply := &a2a.Task{ID: "mine-reply", MessageIDs: []string{MessageID(uid, 2)}}
	sibling := &a2a.Task{ID: "sibling", MessageIDs: []string{MessageID("u-2", -1)}}
	silent := &a2a.Task{ID: "silent"}
	tests := []struct {
		name    string
		tasks   []*a2a.Task
		shared  bool
		want    string
		wantErr bool
	}{
		{"our first message id marks our task", []*a2a.Task{sibling, mine}, true, "mine", false},
		{"a reply id marks it as well", []*a2a.Task{sibling, mineByReply}, true, "mine-reply", false},
		{"only a sibling's task: none is ours, send", []*a2a.Task{sibling}, true, "", false},
		{"nothing listed: send", nil, false, "", false},
		{"no history in our own derived context: the task is ours", []*a2a.Task{silent}, false, "silent", false},
		{"no history in a shared context: cannot tell", []*a2a.Task{silent}, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := OwnTask(tt.tasks, uid, tt.shared)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ErrAmbiguousContext))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got.ID).To(Equal(tt.want))
		})
	}
}
