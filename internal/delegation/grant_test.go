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

func budgetSpec(m v1alpha1.Meters) *v1alpha1.DelegationSpec {
	if m == nil {
		return &v1alpha1.DelegationSpec{}
	}
	return &v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: m}}
}

func TestGrantTakesOnlyTheParentsMeters(t *testing.T) {
	for _, tc := range []struct {
		name          string
		own, parent   v1alpha1.Meters
		grant         v1alpha1.Meters
		ignored       []string
		needsReserved bool
	}{
		{name: "no budgets", grant: nil},
		{name: "a root's own meters", own: v1alpha1.Meters{"tokens": 10, "calls": 2}, grant: v1alpha1.Meters{"tokens": 10, "calls": 2}},
		{name: "the parent's meters, 0 where not named", own: v1alpha1.Meters{"tokens": 10},
			parent: v1alpha1.Meters{"tokens": 100, "calls": 5}, grant: v1alpha1.Meters{"tokens": 10, "calls": 0}, needsReserved: true},
		{name: "meters the parent does not meter are ignored", own: v1alpha1.Meters{"tokens": 10, "made-up": 1 << 40, "zzz": 1},
			parent: v1alpha1.Meters{"tokens": 100}, grant: v1alpha1.Meters{"tokens": 10}, ignored: []string{"made-up", "zzz"}, needsReserved: true},
		{name: "no own budget under a metering parent", parent: v1alpha1.Meters{"tokens": 100},
			grant: v1alpha1.Meters{"tokens": 0}, needsReserved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := budgetSpec(tc.own)
			g.Expect(Grant(spec, tc.parent)).To(Equal(tc.grant))
			g.Expect(IgnoredMeters(spec, tc.parent)).To(Equal(tc.ignored))
			g.Expect(NeedsReservation(tc.parent)).To(Equal(tc.needsReserved))
		})
	}
}

// The reservation entry is the grant: raising spec.budget after the parent
// reserved changes nothing the child may spend or pass on.
func TestHeldGrantIsTheReservation(t *testing.T) {
	parent := &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": 100, "calls": 5}}
	Recompute(parent)
	g := NewWithT(t)
	asked := Grant(budgetSpec(v1alpha1.Meters{"tokens": 10}), parent.Granted)
	_, err := Reserve(parent, "child", "uid-1", asked)
	g.Expect(err).NotTo(HaveOccurred())

	for _, tc := range []struct {
		name    string
		spec    v1alpha1.Meters
		uid     string
		grant   v1alpha1.Meters
		changed bool
	}{
		{name: "as reserved", spec: v1alpha1.Meters{"tokens": 10}, uid: "uid-1", grant: v1alpha1.Meters{"tokens": 10, "calls": 0}},
		{name: "raised after the reservation", spec: v1alpha1.Meters{"tokens": 1_000_000, "calls": 5}, uid: "uid-1",
			grant: v1alpha1.Meters{"tokens": 10, "calls": 0}, changed: true},
		{name: "lowered after the reservation", spec: v1alpha1.Meters{"tokens": 1}, uid: "uid-1",
			grant: v1alpha1.Meters{"tokens": 10, "calls": 0}, changed: true},
		{name: "a meter added that the parent does not meter", spec: v1alpha1.Meters{"tokens": 10, "other": 7}, uid: "uid-1",
			grant: v1alpha1.Meters{"tokens": 10, "calls": 0}},
		{name: "no reservation yet: what spec asks", spec: v1alpha1.Meters{"tokens": 30}, uid: "uid-2",
			grant: v1alpha1.Meters{"tokens": 30, "calls": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			grant, changed := HeldGrant(budgetSpec(tc.spec), parent, tc.uid)
			g.Expect(grant).To(Equal(tc.grant))
			g.Expect(changed).To(Equal(tc.changed))
		})
	}
	t.Run("a parent that meters nothing", func(t *testing.T) {
		grant, changed := HeldGrant(budgetSpec(v1alpha1.Meters{"tokens": 3}), nil, "uid-1")
		NewWithT(t).Expect(grant).To(Equal(v1alpha1.Meters{"tokens": 3}))
		NewWithT(t).Expect(changed).To(BeFalse())
	})
}

// A full ledger refuses one more child (it waits), and takes it once a
// sibling settled.
func TestReservationsAreBounded(t *testing.T) {
	g := NewWithT(t)
	b := &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": 1 << 40}}
	for i := range v1alpha1.MaxReservations {
		_, err := Reserve(b, "c", fmt.Sprintf("uid-%d", i), v1alpha1.Meters{"tokens": 1})
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := Reserve(b, "c", "uid-last", v1alpha1.Meters{"tokens": 1})
	g.Expect(err).To(MatchError(ContainSubstring("holds 500 reservations")))
	changed, err := Reserve(b, "c", "uid-0", v1alpha1.Meters{"tokens": 1})
	g.Expect(err).NotTo(HaveOccurred(), "an entry that exists is still found")
	g.Expect(changed).To(BeFalse())
	g.Expect(Settle(b, "uid-0", func(v1alpha1.Meters) v1alpha1.Meters { return nil })).To(BeTrue())
	changed, err = Reserve(b, "c", "uid-last", v1alpha1.Meters{"tokens": 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
}
