/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestClampReportKeepsSpendInsideTheGrant(t *testing.T) {
	granted := v1alpha1.Meters{"tokens": 100, "calls": 3}
	tests := []struct {
		name     string
		reported v1alpha1.Meters
		want     v1alpha1.Meters
		clamped  bool
	}{
		{"an honest report is kept", v1alpha1.Meters{"tokens": 40}, v1alpha1.Meters{"tokens": 40}, false},
		{"the whole grant is allowed", v1alpha1.Meters{"tokens": 100, "calls": 3}, v1alpha1.Meters{"tokens": 100, "calls": 3}, false},
		{"negative spend counts as 0", v1alpha1.Meters{"tokens": -1_000_000}, v1alpha1.Meters{"tokens": 0}, true},
		{"overspend counts as the grant", v1alpha1.Meters{"tokens": math.MaxInt64}, v1alpha1.Meters{"tokens": 100}, true},
		{"the lowest value counts as 0", v1alpha1.Meters{"calls": math.MinInt64}, v1alpha1.Meters{"calls": 0}, true},
		{"an invented meter is ignored", v1alpha1.Meters{"tokens": 5, "gold": 7}, v1alpha1.Meters{"tokens": 5}, true},
		{"only invented meters leave nothing", v1alpha1.Meters{"gold": 7}, nil, true},
		{"no report", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, note := ClampReport(granted, tt.reported)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(note != "").To(Equal(tt.clamped), "note: %q", note)
		})
	}
}

func TestClampReportWithoutGrantIgnoresEverything(t *testing.T) {
	g := NewWithT(t)
	got, note := ClampReport(nil, v1alpha1.Meters{"tokens": 5})
	g.Expect(got).To(BeNil())
	g.Expect(note).To(ContainSubstring("not granted"))
}

func TestClampReportNoteIsBounded(t *testing.T) {
	reported := v1alpha1.Meters{}
	for i := range 1000 {
		reported[string(rune('a'+i%26))+string(make([]byte, 200))+string(rune(i))] = 1
	}
	_, note := ClampReport(v1alpha1.Meters{"tokens": 1}, reported)
	NewWithT(t).Expect(len(note)).To(BeNumerically("<", 1024))
}

func TestChargeNeverLeavesTheReservation(t *testing.T) {
	settled := func(reported v1alpha1.Meters) *v1alpha1.DelegationStatus {
		st := &v1alpha1.DelegationStatus{Outcome: &v1alpha1.Outcome{Reason: ReasonCompleted},
			Budget: &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": 100}, Reported: reported}}
		return st
	}
	spec := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}}
	reservation := v1alpha1.Meters{"tokens": 100}
	tests := []struct {
		name     string
		reported v1alpha1.Meters
		want     v1alpha1.Meters
	}{
		{"spend within the reservation", v1alpha1.Meters{"tokens": 30}, v1alpha1.Meters{"tokens": 30}},
		{"negative spend charges 0", v1alpha1.Meters{"tokens": -5}, v1alpha1.Meters{"tokens": 0}},
		{"overspend charges the reservation", v1alpha1.Meters{"tokens": math.MaxInt64}, v1alpha1.Meters{"tokens": 100}},
		{"a meter the parent did not reserve is not charged", v1alpha1.Meters{"tokens": 1, "gold": 9}, v1alpha1.Meters{"tokens": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Charge(spec, settled(tt.reported), reservation)).To(Equal(tt.want))
		})
	}
}

func TestLedgerArithmeticSaturates(t *testing.T) {
	g := NewWithT(t)
	b := &v1alpha1.BudgetStatus{
		Granted: v1alpha1.Meters{"tokens": math.MaxInt64},
		Charged: v1alpha1.Meters{"tokens": math.MaxInt64},
		Reservations: []v1alpha1.Reservation{
			{Child: "a", UID: "a", Meters: v1alpha1.Meters{"tokens": math.MaxInt64}},
			{Child: "b", UID: "b", Meters: v1alpha1.Meters{"tokens": math.MaxInt64}},
		},
	}
	Recompute(b)
	g.Expect(b.Reserved["tokens"]).To(Equal(int64(math.MaxInt64)), "no wrap to negative")
	g.Expect(b.Spent["tokens"]).To(Equal(int64(math.MaxInt64)))
	g.Expect(b.Left["tokens"]).To(BeNumerically("<=", 0), "nothing is left, however large the numbers")

	g.Expect(Settle(b, "a", func(v1alpha1.Meters) v1alpha1.Meters { return v1alpha1.Meters{"tokens": math.MaxInt64} })).To(BeTrue())
	g.Expect(b.Charged["tokens"]).To(Equal(int64(math.MaxInt64)))

	g.Expect(subSat(math.MinInt64, math.MaxInt64)).To(Equal(int64(math.MinInt64)))
	g.Expect(subSat(0, math.MinInt64)).To(Equal(int64(math.MaxInt64)))
	g.Expect(addSat(math.MinInt64, -1)).To(Equal(int64(math.MinInt64)))
}
