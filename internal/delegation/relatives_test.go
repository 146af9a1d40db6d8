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

func TestParentChangedOnlyForWhatChildrenActOn(t *testing.T) {
	base := func() *v1alpha1.Delegation {
		return &v1alpha1.Delegation{Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning,
			Budget:   &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": 10}, Left: v1alpha1.Meters{"tokens": 10}},
			Children: &v1alpha1.ChildCounts{Active: 1}}}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.Delegation)
		want   bool
	}{
		{"nothing", func(*v1alpha1.Delegation) {}, false},
		{"children counts", func(d *v1alpha1.Delegation) { d.Status.Children.Active = 2 }, false},
		{"conditions or remote state", func(d *v1alpha1.Delegation) { d.Status.RemoteState = "Working" }, false},
		{"phase", func(d *v1alpha1.Delegation) { d.Status.Phase = v1alpha1.PhaseCanceled }, true},
		{"deletion", func(d *v1alpha1.Delegation) { d.DeletionTimestamp = &metav1.Time{Time: now} }, true},
		{"deadline", func(d *v1alpha1.Delegation) { d.Status.Deadline = &metav1.Time{Time: now} }, true},
		{"budget left", func(d *v1alpha1.Delegation) { d.Status.Budget.Left["tokens"] = 5 }, true},
		{"budget reported only", func(d *v1alpha1.Delegation) { d.Status.Budget.Reported = v1alpha1.Meters{"tokens": 1} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := base(), base()
			tt.change(cur)
			NewWithT(t).Expect(ParentChanged(old, cur)).To(Equal(tt.want))
		})
	}
}

func TestChildChangedOnlyWhenItCounts(t *testing.T) {
	g := NewWithT(t)
	old := &v1alpha1.Delegation{Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning}}
	cur := old.DeepCopy()
	cur.Status.RemoteState = "Working"
	g.Expect(ChildChanged(old, cur)).To(BeFalse())
	cur.Status.Phase = v1alpha1.PhaseSucceeded
	g.Expect(ChildChanged(old, cur)).To(BeTrue())
}
