/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The budget ledger. A child's grant is reserved from its parent before the
// child is sent; when the child settles, one status update of the parent
// removes the reservation and adds the charge, so a crash can never charge
// twice or lose a charge (the entry's presence says whether it was charged).

// Grant is what a Delegation asks to be granted. Under a parent that
// meters something, that is the parent's meters only: the amount it names,
// 0 for each it does not name; meters the parent does not meter are
// ignored (IgnoredMeters names them), so a child can neither grow a ledger
// with names of its own nor escape its parent's bounds. A Delegation whose
// parent meters nothing is granted its own meters.
func Grant(spec *v1alpha1.DelegationSpec, parentGranted v1alpha1.Meters) v1alpha1.Meters {
	var own v1alpha1.Meters
	if spec.Budget != nil {
		own = spec.Budget.Meters
	}
	if len(parentGranted) == 0 {
		if len(own) == 0 {
			return nil
		}
		return maps.Clone(own)
	}
	g := v1alpha1.Meters{}
	for m := range parentGranted {
		g[m] = own[m]
	}
	return g
}

// IgnoredMeters are the meters spec names that its parent does not meter,
// sorted; none when the parent meters nothing.
func IgnoredMeters(spec *v1alpha1.DelegationSpec, parentGranted v1alpha1.Meters) []string {
	if spec.Budget == nil || len(parentGranted) == 0 {
		return nil
	}
	var out []string
	for _, m := range slices.Sorted(maps.Keys(spec.Budget.Meters)) {
		if _, metered := parentGranted[m]; !metered {
			out = append(out, m)
		}
	}
	return out
}

// HeldGrant is a child's grant once the parent holds its reservation: the
// entry itself, whatever spec.budget says now. The reservation is what the
// parent gave; a spec changed after it (admission freezes spec.budget only
// once the child's own status shows the grant) must not grant more than
// the parent reserved. changed reports a spec that asks for something else
// than the entry holds. Without an entry, the grant is what spec asks.
func HeldGrant(spec *v1alpha1.DelegationSpec, parent *v1alpha1.BudgetStatus, uid string) (grant v1alpha1.Meters, changed bool) {
	if parent == nil || len(parent.Granted) == 0 {
		return Grant(spec, nil), false
	}
	asked := Grant(spec, parent.Granted)
	i := slices.IndexFunc(parent.Reservations, func(r v1alpha1.Reservation) bool { return r.UID == uid })
	if i < 0 {
		return asked, false
	}
	held := v1alpha1.Meters{}
	for m := range parent.Granted {
		held[m] = parent.Reservations[i].Meters[m]
	}
	return held, !maps.Equal(held, asked)
}

// NeedsReservation: the parent meters something, so the child must hold a
// reservation before it is sent.
func NeedsReservation(parentGranted v1alpha1.Meters) bool { return len(parentGranted) > 0 }

// Reserve adds the child's reservation to the parent's ledger. It is
// idempotent: an entry that exists is left alone. It refuses a grant that
// exceeds what the parent has left, naming the meters short.
func Reserve(b *v1alpha1.BudgetStatus, child, uid string, grant v1alpha1.Meters) (changed bool, err error) {
	if HasReservation(b, uid) {
		return false, nil
	}
	if len(b.Reservations) >= v1alpha1.MaxReservations {
		return false, fmt.Errorf("the parent holds %d reservations, the most it keeps: waiting for a sibling to settle",
			len(b.Reservations))
	}
	Recompute(b)
	var short []string
	for _, m := range slices.Sorted(maps.Keys(grant)) {
		if _, metered := b.Granted[m]; metered && grant[m] > b.Left[m] {
			short = append(short, fmt.Sprintf("%s: wants %d, %d left", m, grant[m], b.Left[m]))
		}
	}
	if len(short) > 0 {
		return false, fmt.Errorf("the parent's budget is short (%s)", strings.Join(short, "; "))
	}
	reserved := v1alpha1.Meters{}
	for m, n := range grant {
		if _, metered := b.Granted[m]; metered {
			reserved[m] = n
		}
	}
	b.Reservations = append(b.Reservations, v1alpha1.Reservation{Child: child, UID: uid, Meters: reserved})
	Recompute(b)
	return true, nil
}

// HasReservation reports whether the child still holds an entry.
func HasReservation(b *v1alpha1.BudgetStatus, uid string) bool {
	return b != nil && slices.ContainsFunc(b.Reservations, func(r v1alpha1.Reservation) bool { return r.UID == uid })
}

// Settle removes the child's reservation and charges the parent, in one
// change of the ledger. It reports false when there was no entry: the child
// was charged already (or never reserved), so nothing happens.
func Settle(b *v1alpha1.BudgetStatus, uid string, charge func(reservation v1alpha1.Meters) v1alpha1.Meters) bool {
	i := slices.IndexFunc(b.Reservations, func(r v1alpha1.Reservation) bool { return r.UID == uid })
	if i < 0 {
		return false
	}
	c := charge(b.Reservations[i].Meters)
	b.Reservations = slices.Delete(b.Reservations, i, i+1)
	for m, n := range c {
		if _, metered := b.Granted[m]; !metered {
			continue
		}
		if b.Charged == nil {
			b.Charged = v1alpha1.Meters{}
		}
		b.Charged[m] = addSat(b.Charged[m], n)
	}
	Recompute(b)
	return true
}

// Charge is what a settled child costs its parent:
//   - a send the agent refused is refunded;
//   - a task that settled at the agent with a spend report, and a group, are
//     charged what they spent plus what their own children still hold (those
//     children settle later into this ledger, which is already rolled up);
//   - any other end (cancel, deadline, lost task, detach, unreachable) keeps
//     the whole reservation.
//
// Whatever the case, a charge lies within [0, reservation] per meter.
func Charge(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, reservation v1alpha1.Meters) v1alpha1.Meters {
	return clampCharge(charge(spec, st, reservation), reservation)
}

func charge(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, reservation v1alpha1.Meters) v1alpha1.Meters {
	reason := ""
	if st.Outcome != nil {
		reason = st.Outcome.Reason
	}
	switch {
	case Accounted(st):
		// Under a retry policy every attempt counted its own spend
		// (AttemptSpend) as it ended: the ledger holds it all.
		return spentAndReserved(st.Budget)
	case reason == ReasonSendRefused, reason == ReasonDenied:
		// Nothing was sent: the parent gets the whole reservation back.
		return nil
	case IsGroup(spec), st.Budget != nil && st.Budget.Reported != nil && settledAtAgent(reason):
		return spentAndReserved(st.Budget)
	}
	return reservation
}

// spentAndReserved is what a ledger spent plus what its children still hold.
func spentAndReserved(b *v1alpha1.BudgetStatus) v1alpha1.Meters {
	if b == nil {
		return nil
	}
	Recompute(b)
	total := v1alpha1.Meters{}
	for m, n := range b.Spent {
		total[m] = addSat(total[m], n)
	}
	for m, n := range b.Reserved {
		total[m] = addSat(total[m], n)
	}
	return emptyToNil(total)
}

func settledAtAgent(reason string) bool {
	switch reason {
	case ReasonCompleted, ReasonRemoteFailed, ReasonRemoteRejected, ReasonRemote, ReasonLeaseLapsed:
		return true
	}
	return false
}

// Recompute derives reserved, spent and left from the entries, the agent's
// report, the children's charges and the ended attempts' spend.
func Recompute(b *v1alpha1.BudgetStatus) {
	reserved := v1alpha1.Meters{}
	for _, r := range b.Reservations {
		for m, n := range r.Meters {
			reserved[m] = addSat(reserved[m], n)
		}
	}
	spent := v1alpha1.Meters{}
	for m, n := range b.Reported {
		spent[m] = addSat(spent[m], n)
	}
	for m, n := range b.Charged {
		spent[m] = addSat(spent[m], n)
	}
	for m, n := range b.EndedAttempts {
		spent[m] = addSat(spent[m], n)
	}
	var left v1alpha1.Meters
	if len(b.Granted) > 0 {
		left = v1alpha1.Meters{}
		for m, g := range b.Granted {
			left[m] = subSat(subSat(g, spent[m]), reserved[m])
		}
	}
	b.Reserved, b.Spent, b.Left = emptyToNil(reserved), emptyToNil(spent), left
}

func emptyToNil(m v1alpha1.Meters) v1alpha1.Meters {
	if len(m) == 0 {
		return nil
	}
	return m
}
