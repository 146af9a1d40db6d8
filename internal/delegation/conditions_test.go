/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// cond is the part of a condition the table pins.
type cond struct {
	status metav1.ConditionStatus
	reason string
}

func TestSetConditions(t *testing.T) {
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
	)
	tests := []struct {
		name                        string
		phase                       v1alpha1.Phase
		outcome                     *v1alpha1.Outcome
		ready, reconciling, stalled cond
	}{
		{
			name:        "no status yet reads as Pending",
			ready:       cond{F, "Pending"},
			reconciling: cond{T, "Pending"},
			stalled:     cond{F, "Pending"},
		},
		{
			name:        "Pending says why in Ready",
			phase:       v1alpha1.PhasePending,
			outcome:     &v1alpha1.Outcome{Reason: ReasonAgentNotReady, Message: "agent echo is not ready"},
			ready:       cond{F, ReasonAgentNotReady},
			reconciling: cond{T, "Pending"},
			stalled:     cond{F, "Pending"},
		},
		{
			name:        "Running",
			phase:       v1alpha1.PhaseRunning,
			outcome:     &v1alpha1.Outcome{Reason: ReasonSent},
			ready:       cond{F, ReasonSent},
			reconciling: cond{T, "Running"},
			stalled:     cond{F, "Running"},
		},
		{
			name:        "Succeeded is the only Ready",
			phase:       v1alpha1.PhaseSucceeded,
			outcome:     &v1alpha1.Outcome{Reason: ReasonCompleted, Message: "done"},
			ready:       cond{T, "Succeeded"},
			reconciling: cond{F, "Succeeded"},
			stalled:     cond{F, "Succeeded"},
		},
		{
			name:  "Failed stalls with the outcome reason",
			phase: v1alpha1.PhaseFailed,
			outcome: &v1alpha1.Outcome{Reason: ReasonDeadline,
				FailureClass: v1alpha1.FailureBudgetExhausted, Message: "timeout 10m passed"},
			ready:       cond{F, ReasonDeadline},
			reconciling: cond{F, "Failed"},
			stalled:     cond{T, ReasonDeadline},
		},
		{
			name:        "Failed without a reason stalls with the failure class",
			phase:       v1alpha1.PhaseFailed,
			outcome:     &v1alpha1.Outcome{FailureClass: v1alpha1.FailureUnreachable},
			ready:       cond{F, "Failed"},
			reconciling: cond{F, "Failed"},
			stalled:     cond{T, "Unreachable"},
		},
		{
			name:        "Failed without outcome stalls with the phase",
			phase:       v1alpha1.PhaseFailed,
			ready:       cond{F, "Failed"},
			reconciling: cond{F, "Failed"},
			stalled:     cond{T, "Failed"},
		},
		{
			name:        "Canceled stalls",
			phase:       v1alpha1.PhaseCanceled,
			outcome:     &v1alpha1.Outcome{Reason: ReasonParentDeleted, Message: "parent deleted"},
			ready:       cond{F, ReasonParentDeleted},
			reconciling: cond{F, "Canceled"},
			stalled:     cond{T, ReasonParentDeleted},
		},
		{
			name:        "InputRequired is handed back: nothing True",
			phase:       v1alpha1.PhaseInputRequired,
			outcome:     &v1alpha1.Outcome{Reason: ReasonInputRequired, Message: "which region?"},
			ready:       cond{F, ReasonInputRequired},
			reconciling: cond{F, "InputRequired"},
			stalled:     cond{F, "InputRequired"},
		},
		{
			name:        "AuthRequired is handed back: nothing True",
			phase:       v1alpha1.PhaseAuthRequired,
			ready:       cond{F, "AuthRequired"},
			reconciling: cond{F, "AuthRequired"},
			stalled:     cond{F, "AuthRequired"},
		},
		{
			name:        "Detached: Ready False, reason Detached whatever the outcome",
			phase:       v1alpha1.PhaseDetached,
			outcome:     &v1alpha1.Outcome{Reason: ReasonRequested},
			ready:       cond{F, "Detached"},
			reconciling: cond{F, "Detached"},
			stalled:     cond{F, "Detached"},
		},
		{
			name:        "a reason the API server would refuse falls back to the phase",
			phase:       v1alpha1.PhaseFailed,
			outcome:     &v1alpha1.Outcome{Reason: "not a reason!", FailureClass: v1alpha1.FailureInternal},
			ready:       cond{F, "Failed"},
			reconciling: cond{F, "Failed"},
			stalled:     cond{T, "Internal"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{}
			d.Generation = 3
			d.Status.Phase = tc.phase
			d.Status.Outcome = tc.outcome
			now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

			SetConditions(d, now)

			g.Expect(d.Status.Conditions).To(HaveLen(3))
			for condType, want := range map[string]cond{
				ConditionReady: tc.ready, ConditionReconciling: tc.reconciling, ConditionStalled: tc.stalled,
			} {
				c := meta.FindStatusCondition(d.Status.Conditions, condType)
				g.Expect(c).NotTo(BeNil(), condType)
				g.Expect(cond{c.Status, c.Reason}).To(Equal(want), condType)
				g.Expect(c.ObservedGeneration).To(Equal(int64(3)), condType)
				g.Expect(c.LastTransitionTime.Time).To(Equal(now), condType)
				if tc.outcome != nil {
					g.Expect(c.Message).To(Equal(tc.outcome.Message), condType)
				}
			}
		})
	}
}

func TestSetConditionsMovesTransitionTimeOnlyOnChange(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	d := &v1alpha1.Delegation{}
	d.Generation = 1
	d.Status.Phase = v1alpha1.PhasePending
	SetConditions(d, t0)

	d.Status.Phase = v1alpha1.PhaseRunning
	d.Status.Outcome = &v1alpha1.Outcome{Reason: ReasonSent, Message: "task t-1"}
	SetConditions(d, t1)
	reconciling := meta.FindStatusCondition(d.Status.Conditions, ConditionReconciling)
	g.Expect(reconciling.LastTransitionTime.Time).To(Equal(t0), "still True: reason and message change, time does not")
	g.Expect(reconciling.Reason).To(Equal("Running"))
	g.Expect(reconciling.Message).To(Equal("task t-1"))

	d.Status.Phase = v1alpha1.PhaseSucceeded
	SetConditions(d, t2)
	g.Expect(meta.FindStatusCondition(d.Status.Conditions, ConditionReady).LastTransitionTime.Time).To(Equal(t2))
	g.Expect(meta.FindStatusCondition(d.Status.Conditions, ConditionReconciling).LastTransitionTime.Time).To(Equal(t2))
	g.Expect(meta.FindStatusCondition(d.Status.Conditions, ConditionStalled).LastTransitionTime.Time).To(Equal(t0))
}

func TestSetConditionsKeepsOtherConditions(t *testing.T) {
	g := NewWithT(t)
	d := &v1alpha1.Delegation{}
	d.Status.Conditions = []metav1.Condition{{Type: "LeaseGranted", Status: metav1.ConditionTrue, Reason: "Granted"}}
	SetConditions(d, time.Now())
	g.Expect(d.Status.Conditions).To(HaveLen(4))
	g.Expect(meta.IsStatusConditionTrue(d.Status.Conditions, "LeaseGranted")).To(BeTrue())
}

func TestSetAgentReady(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		ready      bool
		reason     string
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"ready", true, "CardRead", metav1.ConditionTrue, "CardRead"},
		{"ready without a reason", true, "", metav1.ConditionTrue, "Ready"},
		{"not ready", false, "CardUnreachable", metav1.ConditionFalse, "CardUnreachable"},
		{"not ready with a reason the API server would refuse", false, "card: 404", metav1.ConditionFalse, "NotReady"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a := &v1alpha1.Agent{}
			a.Generation = 2
			SetAgentReady(a, tc.ready, tc.reason, "message", t0)
			c := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tc.wantStatus))
			g.Expect(c.Reason).To(Equal(tc.wantReason))
			g.Expect(c.Message).To(Equal("message"))
			g.Expect(c.ObservedGeneration).To(Equal(int64(2)))
			g.Expect(c.LastTransitionTime.Time).To(Equal(t0))
		})
	}
}
