/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestCountChildrenKeepsTheOutcomesOfChildrenThatAreGone(t *testing.T) {
	recorded := []v1alpha1.SettledChild{{UID: "a", Phase: v1alpha1.PhaseFailed}, {UID: "b", Phase: v1alpha1.PhaseSucceeded}}
	tests := []struct {
		name      string
		live      []ChildView
		recorded  []v1alpha1.SettledChild
		want      v1alpha1.ChildCounts
		wantTotal int
	}{
		{"live children only", []ChildView{{"a", v1alpha1.PhaseRunning}, {"b", v1alpha1.PhaseSucceeded}}, nil,
			v1alpha1.ChildCounts{Active: 1, Succeeded: 1}, 2},
		{"a recorded child still live counts once", []ChildView{{"a", v1alpha1.PhaseFailed}}, recorded[:1],
			v1alpha1.ChildCounts{Failed: 1}, 1},
		{"a failed child deleted after it settled still counts", []ChildView{{"b", v1alpha1.PhaseSucceeded}}, recorded,
			v1alpha1.ChildCounts{Succeeded: 1, Failed: 1}, 2},
		{"all children gone", nil, recorded, v1alpha1.ChildCounts{Succeeded: 1, Failed: 1}, 2},
		{"a recorded outcome wins over a live phase", []ChildView{{"a", v1alpha1.PhaseRunning}}, recorded[:1],
			v1alpha1.ChildCounts{Failed: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, total := CountChildren(tt.live, tt.recorded)
			g.Expect(c).To(Equal(tt.want))
			g.Expect(total).To(Equal(tt.wantTotal))
		})
	}
}

func TestGroupOfDeletedChildrenStillSettles(t *testing.T) {
	c, _ := CountChildren(nil, []v1alpha1.SettledChild{{UID: "a", Phase: v1alpha1.PhaseFailed}, {UID: "b", Phase: v1alpha1.PhaseSucceeded}})
	step := Group(Observation{Children: c})
	NewWithT(t).Expect(step.Phase).To(Equal(v1alpha1.PhaseFailed))
}

func TestRecordSettledChildIsIdempotentAndBounded(t *testing.T) {
	g := NewWithT(t)
	st := &v1alpha1.DelegationStatus{}
	g.Expect(RecordSettledChild(st, "a", "a", v1alpha1.PhaseFailed)).To(BeTrue())
	g.Expect(RecordSettledChild(st, "a", "a", v1alpha1.PhaseSucceeded)).To(BeFalse(), "an outcome never changes")
	g.Expect(st.SettledChildren).To(Equal([]v1alpha1.SettledChild{{UID: "a", Name: "a", Phase: v1alpha1.PhaseFailed}}))

	for i := len(st.SettledChildren); i < MaxSettledChildren; i++ {
		RecordSettledChild(st, fmt.Sprint("s", i), "", v1alpha1.PhaseSucceeded)
	}
	g.Expect(st.SettledChildren).To(HaveLen(MaxSettledChildren))
	g.Expect(RecordSettledChild(st, "late-success", "", v1alpha1.PhaseSucceeded)).To(BeFalse(), "full: a success is not kept")
	g.Expect(RecordSettledChild(st, "late-failure", "", v1alpha1.PhaseFailed)).To(BeTrue(), "a failure makes room")
	g.Expect(st.SettledChildren).To(HaveLen(MaxSettledChildren))
	g.Expect(HasSettledChild(st, "late-failure")).To(BeTrue())
	g.Expect(HasSettledChild(st, "a")).To(BeTrue(), "failures are never evicted")
}
