/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestOnDelete(t *testing.T) {
	marker := metav1.Now()
	running := v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, TaskID: "t1"}
	sending := v1alpha1.DelegationStatus{SendStarted: &marker, SendResult: v1alpha1.SendInFlight}
	agentRef := &v1alpha1.AgentRef{Name: "a"}
	parentRef := &v1alpha1.LocalRef{Name: "p"}
	cases := []struct {
		name   string
		spec   v1alpha1.DelegationSpec
		status v1alpha1.DelegationStatus
		parent *Parent
		reason string // "" when nothing is cancelled
	}{
		{name: "a running task deleted itself", spec: v1alpha1.DelegationSpec{AgentRef: agentRef}, status: running, reason: ReasonRequested},
		{name: "a send on its way may have started a task", spec: v1alpha1.DelegationSpec{AgentRef: agentRef}, status: sending, reason: ReasonRequested},
		{name: "its parent is being deleted", spec: v1alpha1.DelegationSpec{AgentRef: agentRef, ParentRef: parentRef}, status: running,
			parent: &Parent{Found: true, Deleting: true, Owns: true}, reason: ReasonParentDeleted},
		{name: "its parent is gone", spec: v1alpha1.DelegationSpec{AgentRef: agentRef, ParentRef: parentRef}, status: running,
			parent: &Parent{}, reason: ReasonParentDeleted},
		{name: "a child deleted under a live parent", spec: v1alpha1.DelegationSpec{AgentRef: agentRef, ParentRef: parentRef}, status: running,
			parent: &Parent{Found: true, Owns: true, Phase: v1alpha1.PhaseRunning}, reason: ReasonRequested},
		{name: "a Detach child outlives its deleted parent",
			spec:   v1alpha1.DelegationSpec{AgentRef: agentRef, ParentRef: parentRef, ParentClosePolicy: v1alpha1.ParentClosePolicyDetach},
			status: running, parent: &Parent{Found: true, Deleting: true}},
		{name: "a Detach child deleted itself is cancelled",
			spec:   v1alpha1.DelegationSpec{AgentRef: agentRef, ParentRef: parentRef, ParentClosePolicy: v1alpha1.ParentClosePolicyDetach},
			status: running, parent: &Parent{Found: true, Phase: v1alpha1.PhaseRunning}, reason: ReasonRequested},
		{name: "nothing was sent", spec: v1alpha1.DelegationSpec{AgentRef: agentRef}, status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhasePending}},
		{name: "settled", spec: v1alpha1.DelegationSpec{AgentRef: agentRef},
			status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseSucceeded, TaskID: "t1"}},
		{name: "detached by spec", spec: v1alpha1.DelegationSpec{AgentRef: agentRef, Detach: true}, status: running},
		{name: "a group has no task", spec: v1alpha1.DelegationSpec{}, status: running},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			step, ok := OnDelete(Observation{Spec: &c.spec, Status: &c.status, Parent: c.parent})
			g.Expect(ok).To(Equal(c.reason != ""))
			g.Expect(MayRun(&c.spec, &c.status)).To(Equal(c.reason != "" || c.spec.ParentClosePolicy == v1alpha1.ParentClosePolicyDetach))
			if !ok {
				return
			}
			g.Expect(step.Kind).To(Equal(StepCancel))
			g.Expect(step.Phase).To(Equal(v1alpha1.PhaseCanceled))
			g.Expect(step.Outcome.Reason).To(Equal(c.reason))
		})
	}
}
