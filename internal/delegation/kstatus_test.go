/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// TestKstatus pins what GitOps tools that read kstatus (Flux health checks,
// kpt, cli-utils appliers) make of a Delegation in each phase.
func TestKstatus(t *testing.T) {
	tests := []struct {
		name               string
		phase              v1alpha1.Phase
		outcome            *v1alpha1.Outcome
		observedGeneration int64 // 0: the current generation
		want               status.Status
	}{
		{name: "Pending", phase: v1alpha1.PhasePending, want: status.InProgressStatus},
		{name: "Running", phase: v1alpha1.PhaseRunning, want: status.InProgressStatus},
		{name: "Succeeded", phase: v1alpha1.PhaseSucceeded, want: status.CurrentStatus},
		{name: "Failed", phase: v1alpha1.PhaseFailed, want: status.FailedStatus,
			outcome: &v1alpha1.Outcome{FailureClass: v1alpha1.FailureRejected, Message: "refused"}},
		{name: "Canceled", phase: v1alpha1.PhaseCanceled, want: status.FailedStatus,
			outcome: &v1alpha1.Outcome{Reason: ReasonRequested}},
		// Nothing True: kstatus falls back to Ready=False, which it reads as
		// still in progress. A wait on such a task ends at its timeout.
		{name: "InputRequired", phase: v1alpha1.PhaseInputRequired, want: status.InProgressStatus},
		{name: "AuthRequired", phase: v1alpha1.PhaseAuthRequired, want: status.InProgressStatus},
		{name: "Detached", phase: v1alpha1.PhaseDetached, want: status.InProgressStatus},
		{name: "Succeeded but a newer generation not yet observed", phase: v1alpha1.PhaseSucceeded,
			observedGeneration: 1, want: status.InProgressStatus},
		{name: "Failed but a newer generation not yet observed", phase: v1alpha1.PhaseFailed,
			observedGeneration: 1, want: status.InProgressStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{}
			d.APIVersion = v1alpha1.GroupVersion.String()
			d.Kind = "Delegation"
			d.Name, d.Namespace, d.Generation = "task", "default", 2
			d.Status.Phase = tc.phase
			d.Status.Outcome = tc.outcome
			SetConditions(d, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			d.Status.ObservedGeneration = d.Generation
			if tc.observedGeneration != 0 {
				d.Status.ObservedGeneration = tc.observedGeneration
			}

			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
			g.Expect(err).NotTo(HaveOccurred())
			res, err := status.Compute(&unstructured.Unstructured{Object: obj})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status).To(Equal(tc.want), res.Message)
		})
	}
}

// TestKstatusBeforeFirstStatus pins that a Delegation the operator has not
// written yet counts as Current to kstatus (it cannot know the type uses
// conditions); GitOps waits therefore rely on observedGeneration once written.
func TestKstatusBeforeFirstStatus(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Delegation",
		"metadata": map[string]any{"name": "task", "namespace": "default", "generation": int64(1)},
	}}
	res, err := status.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal(status.CurrentStatus))
}
