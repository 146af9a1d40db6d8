/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// The parent's ledger is written by its children with optimistic
// concurrency: N children reserving at once are each granted only what is
// left, and settling removes the entry and adds the charge in one update.

func (s *scope) parentGranted() v1alpha1.Meters {
	if s.parentObj == nil || s.parentObj.Status.Budget == nil {
		return nil
	}
	return s.parentObj.Status.Budget.Granted
}

// grantOwnBudget fixes this Delegation's grant when it starts: under a
// metering parent, the reservation the parent holds for it, whatever
// spec.budget says by now; meters the parent does not meter are ignored.
// Both are told with a Warning Event.
func (r *DelegationReconciler) grantOwnBudget(s *scope) {
	var parent *v1alpha1.BudgetStatus
	if s.parentObj != nil {
		parent = s.parentObj.Status.Budget
	}
	g, changed := delegation.HeldGrant(&s.d.Spec, parent, string(s.d.UID))
	if changed {
		r.Recorder.Eventf(s.d, nil, "Warning", "BudgetFrozen", "Grant",
			"spec.budget changed after the parent reserved the grant; the grant stays what was reserved: %s", meterList(g))
	}
	if ignored := delegation.IgnoredMeters(&s.d.Spec, s.parentGranted()); len(ignored) > 0 {
		r.Recorder.Eventf(s.d, nil, "Warning", "MetersIgnored", "Grant",
			"the parent does not meter %s: not granted", strings.Join(ignored, ", "))
	}
	if g == nil {
		return
	}
	if s.d.Status.Budget == nil {
		s.d.Status.Budget = &v1alpha1.BudgetStatus{}
	}
	s.d.Status.Budget.Granted = g
	delegation.Recompute(s.d.Status.Budget)
}

// reserveFromParent makes sure the parent holds this child's reservation
// before anything is sent. It returns a non-nil shortage when the parent has
// not enough left; the child then waits (Pending, BudgetExhausted).
func (r *DelegationReconciler) reserveFromParent(ctx context.Context, s *scope) (shortage error, err error) {
	if s.parentObj == nil || !delegation.NeedsReservation(s.parentGranted()) {
		return nil, nil
	}
	// The finalizer first: deleting this child must give the reservation back.
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return nil, err
	}
	grant := delegation.Grant(&s.d.Spec, s.parentGranted())
	err = r.updateParentLedger(ctx, s, func(b *v1alpha1.BudgetStatus) bool {
		changed, short := delegation.Reserve(b, s.d.Name, string(s.d.UID), grant)
		shortage = short
		return changed
	})
	if err == nil && shortage == nil {
		addMeters(budgetReserved, grant)
	}
	return shortage, err
}

// chargeParent settles this child's reservation and, for a group, records
// the child's outcome, in one update; once both are done it does nothing,
// so it is safe to call on every pass of a settled child.
func (r *DelegationReconciler) chargeParent(ctx context.Context, s *scope) error {
	if s.parentObj == nil {
		return nil
	}
	uid := string(s.d.UID)
	record := delegation.IsGroup(&s.parentObj.Spec) && s.parentObj.DeletionTimestamp.IsZero()
	if !delegation.HasReservation(s.parentObj.Status.Budget, uid) && (!record || delegation.HasSettledChild(&s.parentObj.Status, uid)) {
		return nil
	}
	var charged, refunded v1alpha1.Meters
	err := r.updateParentStatus(ctx, s, func(st *v1alpha1.DelegationStatus) bool {
		recorded := record && delegation.RecordSettledChild(st, uid, s.d.Name, s.d.Status.Phase)
		if st.Budget == nil {
			return recorded
		}
		return delegation.Settle(st.Budget, uid, func(reservation v1alpha1.Meters) v1alpha1.Meters {
			charged = delegation.Charge(&s.d.Spec, &s.d.Status, reservation)
			refunded = v1alpha1.Meters{}
			for m, n := range reservation {
				refunded[m] = n - charged[m]
			}
			return charged
		}) || recorded
	})
	if err == nil {
		addMeters(budgetCharged, charged)
		addMeters(budgetRefunded, refunded)
	}
	return err
}

// updateParentLedger applies change to a fresh copy of the parent's ledger
// and writes it with the resourceVersion it read, retrying on conflicts.
func (r *DelegationReconciler) updateParentLedger(ctx context.Context, s *scope, change func(*v1alpha1.BudgetStatus) bool) error {
	return r.updateParentStatus(ctx, s, func(st *v1alpha1.DelegationStatus) bool {
		if st.Budget == nil {
			st.Budget = &v1alpha1.BudgetStatus{}
		}
		return change(st.Budget)
	})
}

// updateParentStatus is updateParentLedger for any part of the parent's
// status (the ledger and the outcomes a group keeps change together).
func (r *DelegationReconciler) updateParentStatus(ctx context.Context, s *scope, change func(*v1alpha1.DelegationStatus) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var p v1alpha1.Delegation
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.parentObj), &p); err != nil {
			return err
		}
		if p.UID != s.parentObj.UID {
			return nil // a new parent of the same name: not this child's ledger
		}
		base := p.DeepCopy()
		if !change(&p.Status) {
			return nil
		}
		if err := r.Status().Patch(ctx, &p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		s.parentObj = &p
		return nil
	})
}

// meterList shows meters as "calls=0, tokens=10".
func meterList(m v1alpha1.Meters) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
