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

func conformanceAgent(check bool, ready bool, st *v1alpha1.AgentConformanceStatus, interval time.Duration) *v1alpha1.Agent {
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	if check || interval > 0 {
		a.Spec.Conformance = &v1alpha1.AgentConformance{Check: check}
		if interval > 0 {
			a.Spec.Conformance.Interval = &metav1.Duration{Duration: interval}
		}
	}
	SetAgentReady(a, ready, "", "", time.Time{})
	a.Status.ObservedGeneration = a.Generation
	a.Status.Conformance = st
	return a
}

func TestConformanceDue(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ran := func(ago time.Duration, gen int64) *v1alpha1.AgentConformanceStatus {
		at := metav1.NewTime(now.Add(-ago))
		return &v1alpha1.AgentConformanceStatus{LastCheckTime: &at, ObservedGeneration: gen}
	}
	for name, tc := range map[string]struct {
		agent *v1alpha1.Agent
		due   bool
		wait  time.Duration
	}{
		"not asked for":              {agent: conformanceAgent(false, true, nil, 0)},
		"asked for, then turned off": {agent: conformanceAgent(false, true, ran(48*time.Hour, 3), time.Hour)},
		"asked for, agent not ready": {agent: conformanceAgent(true, false, nil, 0)},
		"ready for an older spec": {agent: func() *v1alpha1.Agent {
			a := conformanceAgent(true, true, nil, 0)
			a.Status.ObservedGeneration = 2
			return a
		}()},
		"never ran":                   {agent: conformanceAgent(true, true, nil, 0), due: true},
		"ran for an older generation": {agent: conformanceAgent(true, true, ran(time.Minute, 2), 0), due: true},
		"ran recently":                {agent: conformanceAgent(true, true, ran(time.Hour, 3), 0), wait: 23 * time.Hour},
		"interval passed":             {agent: conformanceAgent(true, true, ran(25*time.Hour, 3), 0), due: true},
		"own interval":                {agent: conformanceAgent(true, true, ran(30*time.Minute, 3), time.Hour), wait: 30 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			due, wait := ConformanceDue(tc.agent, now)
			g.Expect(due).To(Equal(tc.due))
			g.Expect(wait).To(Equal(tc.wait))
		})
	}
}

func TestSetAgentConformant(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := metav1.NewTime(now)

	a := conformanceAgent(true, true, &v1alpha1.AgentConformanceStatus{LastCheckTime: &at, ObservedGeneration: 3, Summary: "27 pass"}, 0)
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	c := meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(ReasonMustsPass))
	g.Expect(SetAgentConformant(a, now.Add(time.Minute))).To(BeFalse(), "nothing changed")

	a.Status.Conformance.Failed = []string{"cancel.working-task", "lease.lapse-stops-task"}
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	c = meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(ReasonMustFailed))
	g.Expect(c.Message).To(HavePrefix("failed: cancel.working-task, lease.lapse-stops-task"))

	a.Status.Conformance.Verdict = "cancel.working-task failed: task t still Working 15s after CancelTask"
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	c = meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	g.Expect(c.Message).To(HavePrefix("failed: cancel.working-task, lease.lapse-stops-task; cancel.working-task failed: task t still Working"))

	// A MUST that could not run is not a pass.
	a.Status.Conformance.Failed = nil
	a.Status.Conformance.NotRun = []string{"cancel.working-task"}
	a.Status.Conformance.Verdict = "cancel.working-task not run: the task was Completed before it could be cancelled"
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	c = meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(ReasonMustNotRun))
	g.Expect(c.Message).To(HavePrefix("not run: cancel.working-task; cancel.working-task not run: the task was Completed"))

	// Nor is an agent that answers only with messages.
	a.Status.Conformance.MessageOnly = true
	a.Status.Conformance.Verdict = "answers with messages only: tether cannot follow its work"
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	c = meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(ReasonMessageOnly))
	g.Expect(c.Message).To(HavePrefix("answers with messages only: tether cannot follow its work; 27 pass"))

	a.Status.Conformance = &v1alpha1.AgentConformanceStatus{ObservedGeneration: 3, Summary: "the card could not be read"}
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	g.Expect(meta.FindStatusCondition(a.Status.Conditions, ConditionConformant).Status).To(Equal(metav1.ConditionUnknown))

	a.Spec.Conformance.Check = false
	g.Expect(SetAgentConformant(a, now)).To(BeTrue())
	g.Expect(meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)).To(BeNil(), "off again: no condition")
	g.Expect(meta.FindStatusCondition(a.Status.Conditions, ConditionReady)).NotTo(BeNil(), "Ready is left alone")
}
