/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

// Meters per rolling window (spec.hard.meters): a root's budget is written
// into the ledger of every quota of its namespace that limits one of its
// meters before the root starts, and turned into its charge when it settles
// (delegation.ChargeMeters, SettleMeters). The ledger lives in the quota's
// status and is written with the resourceVersion it was read at, so two
// roots starting at once cannot both take the last room, and nothing of it
// is kept in memory.

import (
	"context"
	"slices"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// admitQuotaMeters holds a root Pending (reason QuotaExceeded, the record
// returned, with when to look again) while its budget does not fit a meter
// window of its namespace's quotas, as the cache shows them: checked before
// the other limits, so a root waiting for a window holds no other place.
// A child, or a namespace without meter limits, passes.
func (r *DelegationReconciler) admitQuotaMeters(ctx context.Context, s *scope) (*delegation.Record, time.Duration, error) {
	rec, after, _, _, err := r.checkQuotaMeters(ctx, s)
	return rec, after, err
}

// chargeQuotaMeters records the root in the ledgers of its namespace's
// quotas that limit meters, last before it starts, checking each ledger
// again as the API server has it; a root another one took the room from
// waits as in admitQuotaMeters.
func (r *DelegationReconciler) chargeQuotaMeters(ctx context.Context, s *scope) (*delegation.Record, time.Duration, error) {
	wait, after, quotas, ask, err := r.checkQuotaMeters(ctx, s)
	if wait != nil || err != nil {
		return wait, after, err
	}
	views := meterViews(quotas)
	for i := range quotas {
		var at time.Time
		err := r.updateQuotaStatus(ctx, &quotas[i], func(q *v1alpha1.DelegationQuota) bool {
			wait, at = nil, time.Time{} // (again after a conflict)
			// This quota as the API server has it, beside the others (which
			// decide which older roots can ever start, so go first).
			fresh := slices.Clone(views)
			fresh[i] = meterView(q)
			if rec, ok, retryAt := delegation.MeterGate(fresh, ask); !ok {
				wait, at = &rec, retryAt // another root took the room since the cache was read
				return false
			}
			used, changed := delegation.ChargeMeters(q.Status.Used.Meters, q.Spec.Hard.Meters, *ask.Root, s.now)
			q.Status.Used.Meters = used
			return changed
		})
		if err != nil || wait != nil {
			return wait, untilRetry(at, s.now), err
		}
	}
	return nil, 0, nil
}

// checkQuotaMeters asks delegation.MeterGate with the cached quotas that
// limit meters (none for a child).
func (r *DelegationReconciler) checkQuotaMeters(ctx context.Context, s *scope) (
	wait *delegation.Record, after time.Duration, quotas []v1alpha1.DelegationQuota, ask delegation.QuotaAsk, err error) {
	if s.d.Spec.ParentRef != nil {
		return nil, 0, nil, ask, nil
	}
	if quotas, err = r.meterQuotas(ctx, s.d.Namespace); err != nil || len(quotas) == 0 {
		return nil, 0, nil, ask, err
	}
	if ask, err = r.meterAsk(ctx, s); err != nil {
		return nil, 0, nil, ask, err
	}
	if rec, ok, at := delegation.MeterGate(meterViews(quotas), ask); !ok {
		return &rec, untilRetry(at, s.now), nil, ask, nil
	}
	return nil, 0, quotas, ask, nil
}

// settleQuotaMeters turns a settled root's entries into what it was charged
// (delegation.Charge, as a parent charges a child), so the window gets back
// what it did not use. Once done it reads only the cache: it is safe on
// every pass of a settled root.
func (r *DelegationReconciler) settleQuotaMeters(ctx context.Context, s *scope) error {
	if s.d.Spec.ParentRef != nil {
		return nil
	}
	quotas, err := r.meterQuotas(ctx, s.d.Namespace)
	if err != nil {
		return err
	}
	uid := string(s.d.UID)
	for i := range quotas {
		if !delegation.HoldsMeters(quotas[i].Status.Used.Meters, uid) {
			continue
		}
		err := r.updateQuotaStatus(ctx, &quotas[i], func(q *v1alpha1.DelegationQuota) bool {
			used, changed := delegation.SettleMeters(q.Status.Used.Meters, q.Spec.Hard.Meters, uid, s.now,
				func(held v1alpha1.Meters) v1alpha1.Meters { return delegation.Charge(&s.d.Spec, &s.d.Status, held) })
			q.Status.Used.Meters = used
			return changed
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// meterQuotas are the cached quotas of the namespace that limit meters.
func (r *DelegationReconciler) meterQuotas(ctx context.Context, ns string) ([]v1alpha1.DelegationQuota, error) {
	var list v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, q := range list.Items {
		if len(q.Spec.Hard.Meters) > 0 {
			out = append(out, q)
		}
	}
	return out, nil
}

// meterAsk is the root and the other roots of its namespace waiting for a
// quota, which go first when older.
func (r *DelegationReconciler) meterAsk(ctx context.Context, s *scope) (delegation.QuotaAsk, error) {
	ask := delegation.QuotaAsk{UID: string(s.d.UID), Root: rootAsk(s.d), Now: s.now}
	var waiting v1alpha1.DelegationList
	if err := r.List(ctx, &waiting, client.InNamespace(s.d.Namespace),
		client.MatchingFields{indexWaiting: waitingKey(delegation.ReasonQuotaExceeded, "")}, client.UnsafeDisableDeepCopy); err != nil {
		return ask, err
	}
	for i := range waiting.Items {
		if d := &waiting.Items[i]; d.Spec.ParentRef == nil && d.UID != s.d.UID && d.DeletionTimestamp.IsZero() {
			ask.WaitingRoots = append(ask.WaitingRoots, *rootAsk(d))
		}
	}
	return ask, nil
}

func rootAsk(d *v1alpha1.Delegation) *delegation.RootAsk {
	a := &delegation.RootAsk{UID: string(d.UID), Name: d.Name, Created: d.CreationTimestamp.Time}
	if d.Spec.Budget != nil {
		a.Budget = d.Spec.Budget.Meters
	}
	return a
}

func meterViews(quotas []v1alpha1.DelegationQuota) []delegation.Quota {
	views := make([]delegation.Quota, 0, len(quotas))
	for i := range quotas {
		views = append(views, meterView(&quotas[i]))
	}
	return views
}

func meterView(q *v1alpha1.DelegationQuota) delegation.Quota {
	return delegation.Quota{Name: q.Name, Hard: q.Spec.Hard, Meters: q.Status.Used.Meters}
}

// untilRetry is how long a root waits before it looks at the window again
// (zero: a settle or a change of the quota wakes it).
func untilRetry(at, now time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(now), time.Millisecond)
}

// updateQuotaStatus applies change to a fresh copy of the quota read from
// the API server and writes its status with the resourceVersion it read,
// retrying on conflicts. An update, not a merge patch: the first write of
// status.used needs its required fields, which a patch leaves out at zero.
func (r *DelegationReconciler) updateQuotaStatus(ctx context.Context, cached *v1alpha1.DelegationQuota,
	change func(*v1alpha1.DelegationQuota) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var q v1alpha1.DelegationQuota
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), &q); err != nil {
			return client.IgnoreNotFound(err) // deleted: no ledger to keep
		}
		if !change(&q) {
			return nil // (a quota created again under the name is checked as it is now)
		}
		return r.Status().Update(ctx, &q)
	})
}
