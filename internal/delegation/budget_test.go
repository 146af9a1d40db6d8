/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func ledger(granted v1alpha1.Meters) *v1alpha1.BudgetStatus {
	b := &v1alpha1.BudgetStatus{Granted: granted}
	Recompute(b)
	return b
}

func TestGrantNamesEveryParentMeter(t *testing.T) {
	tests := []struct {
		name   string
		own    v1alpha1.Meters
		parent v1alpha1.Meters
		want   v1alpha1.Meters
	}{
		{"no budget anywhere is unbounded", nil, nil, nil},
		{"a root grants its own meters", v1alpha1.Meters{"tokens": 5}, nil, v1alpha1.Meters{"tokens": 5}},
		{"a meter the child does not name is granted as 0", v1alpha1.Meters{"tokens": 5}, v1alpha1.Meters{"tokens": 100, "calls": 3},
			v1alpha1.Meters{"tokens": 5, "calls": 0}},
		{"a child without budget gets 0 of everything the parent meters", nil, v1alpha1.Meters{"tokens": 100},
			v1alpha1.Meters{"tokens": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &v1alpha1.DelegationSpec{}
			if tt.own != nil {
				spec.Budget = &v1alpha1.BudgetSpec{Meters: tt.own}
			}
			NewWithT(t).Expect(Grant(spec, tt.parent)).To(Equal(tt.want))
		})
	}
}

func TestReserveHoldsFromWhatIsLeft(t *testing.T) {
	g := NewWithT(t)
	b := ledger(v1alpha1.Meters{"tokens": 100})

	changed, err := Reserve(b, "a", "uid-a", v1alpha1.Meters{"tokens": 60})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(b.Reserved).To(Equal(v1alpha1.Meters{"tokens": 60}))
	g.Expect(b.Left).To(Equal(v1alpha1.Meters{"tokens": 40}))

	changed, err = Reserve(b, "a", "uid-a", v1alpha1.Meters{"tokens": 60})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "reserving again is a no-op")
	g.Expect(b.Reservations).To(HaveLen(1))

	_, err = Reserve(b, "b", "uid-b", v1alpha1.Meters{"tokens": 50})
	g.Expect(err).To(MatchError(ContainSubstring("tokens: wants 50, 40 left")))
	g.Expect(b.Reservations).To(HaveLen(1), "a refused reservation holds nothing")

	_, err = Reserve(b, "c", "uid-c", v1alpha1.Meters{"tokens": 40, "unmetered": 1e9})
	g.Expect(err).NotTo(HaveOccurred(), "meters the parent does not meter are not reserved")
	g.Expect(b.Left).To(Equal(v1alpha1.Meters{"tokens": 0}))
	g.Expect(b.Reserved).To(Equal(v1alpha1.Meters{"tokens": 100}))
}

func TestSettleChargesExactlyOnce(t *testing.T) {
	g := NewWithT(t)
	b := ledger(v1alpha1.Meters{"tokens": 100})
	_, _ = Reserve(b, "a", "uid-a", v1alpha1.Meters{"tokens": 60})
	charge := func(v1alpha1.Meters) v1alpha1.Meters { return v1alpha1.Meters{"tokens": 25} }

	g.Expect(Settle(b, "uid-a", charge)).To(BeTrue())
	g.Expect(b.Reservations).To(BeEmpty())
	g.Expect(b.Charged).To(Equal(v1alpha1.Meters{"tokens": 25}))
	g.Expect(b.Spent).To(Equal(v1alpha1.Meters{"tokens": 25}))
	g.Expect(b.Left).To(Equal(v1alpha1.Meters{"tokens": 75}))

	g.Expect(Settle(b, "uid-a", charge)).To(BeFalse(), "a second settle finds no entry")
	g.Expect(b.Charged).To(Equal(v1alpha1.Meters{"tokens": 25}))
}

func TestLedgerAddsUp(t *testing.T) {
	b := &v1alpha1.BudgetStatus{
		Granted:      v1alpha1.Meters{"tokens": 1000},
		Reported:     v1alpha1.Meters{"tokens": 50},
		Charged:      v1alpha1.Meters{"tokens": 200},
		Reservations: []v1alpha1.Reservation{{UID: "x", Meters: v1alpha1.Meters{"tokens": 300}}},
	}
	Recompute(b)
	g := NewWithT(t)
	g.Expect(b.Spent).To(Equal(v1alpha1.Meters{"tokens": 250}))
	g.Expect(b.Reserved).To(Equal(v1alpha1.Meters{"tokens": 300}))
	g.Expect(b.Left).To(Equal(v1alpha1.Meters{"tokens": 450}))
}

// The refund rules of design §5, one case each.
func TestChargeFollowsTheRefundRules(t *testing.T) {
	reservation := v1alpha1.Meters{"tokens": 100}
	reported := &v1alpha1.BudgetStatus{Reported: v1alpha1.Meters{"tokens": 30}}
	agentTask := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}}
	group := &v1alpha1.DelegationSpec{}
	settled := func(reason string, b *v1alpha1.BudgetStatus) *v1alpha1.DelegationStatus {
		return &v1alpha1.DelegationStatus{Outcome: &v1alpha1.Outcome{Reason: reason}, Budget: b}
	}
	tests := []struct {
		name string
		spec *v1alpha1.DelegationSpec
		st   *v1alpha1.DelegationStatus
		want v1alpha1.Meters
	}{
		{"completed with a report is charged the report", agentTask, settled(ReasonCompleted, reported), v1alpha1.Meters{"tokens": 30}},
		{"failed at the agent with a report is charged the report", agentTask, settled(ReasonRemoteFailed, reported), v1alpha1.Meters{"tokens": 30}},
		{"completed without a report keeps the reservation", agentTask, settled(ReasonCompleted, nil), reservation},
		{"a refused send is refunded", agentTask, settled(ReasonSendRefused, nil), nil},
		{"unreachable keeps the reservation", agentTask, settled(ReasonUnreachable, nil), reservation},
		{"cancel keeps the reservation even with a report", agentTask, settled(ReasonRequested, reported), reservation},
		{"a deadline keeps the reservation", agentTask, settled(ReasonDeadline, reported), reservation},
		{"a lost task keeps the reservation", agentTask, settled(ReasonTaskLost, nil), reservation},
		{"detach keeps the reservation", agentTask, settled(ReasonDetached, reported), reservation},
		{"a group is charged what its children cost", group, settled(ReasonChildCanceled,
			&v1alpha1.BudgetStatus{Charged: v1alpha1.Meters{"tokens": 70}}), v1alpha1.Meters{"tokens": 70}},
		{"a report includes what the task's own children were charged", agentTask, settled(ReasonCompleted,
			&v1alpha1.BudgetStatus{Reported: v1alpha1.Meters{"tokens": 10}, Charged: v1alpha1.Meters{"tokens": 40}}), v1alpha1.Meters{"tokens": 50}},
		{"what the task's children still hold is charged too", agentTask, settled(ReasonCompleted,
			&v1alpha1.BudgetStatus{Reported: v1alpha1.Meters{"tokens": 10}, Reservations: []v1alpha1.Reservation{
				{UID: "c", Meters: v1alpha1.Meters{"tokens": 25}}}}), v1alpha1.Meters{"tokens": 35}},
		{"a group that settles with active children is charged their reservations", group, settled(ReasonRequested,
			&v1alpha1.BudgetStatus{Charged: v1alpha1.Meters{"tokens": 5}, Reservations: []v1alpha1.Reservation{
				{UID: "c", Meters: v1alpha1.Meters{"tokens": 60}}}}), v1alpha1.Meters{"tokens": 65}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Charge(tt.spec, tt.st, reservation)).To(Equal(tt.want))
		})
	}
}
