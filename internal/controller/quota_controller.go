/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// quotaReconciler writes a DelegationQuota's status.used from the cache on
// every change of its namespace's Delegations: it is recomputed, never
// counted, so it is exact after any restart. Of the meter ledgers (written
// by the roots as they start and settle) it drops what left the window and
// recounts used, when the next entry leaves.
type quotaReconciler struct {
	client.Client
	// apiReader confirms that a root missing from the cache is gone.
	apiReader client.Reader
	now       func() time.Time
}

func (r *quotaReconciler) setup(mgr ctrl.Manager) error {
	quotaMetrics.use(mgr.GetClient())
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.DelegationQuota{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, usedChanged()))).
		Watches(&v1alpha1.Delegation{}, handler.EnqueueRequestsFromMapFunc(r.quotasOf), builder.WithPredicates(quotaUseChanged())).
		Named("delegationquota").
		Complete(r)
}

func (r *quotaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var q v1alpha1.DelegationQuota
	if err := r.Get(ctx, req.NamespacedName, &q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	used, err := r.used(ctx, q.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.now()
	used.Meters, err = r.settleGoneRoots(ctx, &q, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	used.Meters, _ = delegation.PruneMeters(used.Meters, q.Spec.Hard.Meters, now)
	metersChanged := !equality.Semantic.DeepEqual(used.Meters, q.Status.Used.Meters)
	res := ctrl.Result{}
	if next := delegation.NextMeterExpiry(used.Meters, q.Spec.Hard.Meters, now); !next.IsZero() {
		res.RequeueAfter = max(next.Sub(now), time.Millisecond)
	}
	if !metersChanged && q.Status.Used.InFlight == used.InFlight && q.Status.Used.Waiting == used.Waiting &&
		q.Status.ObservedGeneration == q.Generation {
		return res, nil
	}
	// An update, not a merge patch: a patch from zero values leaves out the
	// fields that stay zero, which the first write needs (they are required).
	// A ledger a root wrote since the cache was read makes it conflict.
	q.Status.Used, q.Status.ObservedGeneration = used, q.Generation
	err = r.Status().Update(ctx, &q)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	return res, err
}

// settleGoneRoots settles, at their whole budget, the entries in flight of
// roots deleted before they settled (their own pass never settles them):
// what they spent is not known, as for a cancelled task. A root missing from
// the cache is looked up on the API server before it is taken for gone.
func (r *quotaReconciler) settleGoneRoots(ctx context.Context, q *v1alpha1.DelegationQuota, now time.Time) ([]v1alpha1.MeterUse, error) {
	ledgers := q.Status.Used.Meters
	for uid, name := range delegation.InFlightRoots(ledgers) {
		if name == "" {
			continue
		}
		gone, err := r.rootGone(ctx, types.NamespacedName{Namespace: q.Namespace, Name: name}, uid)
		if err != nil {
			return nil, err
		}
		if gone {
			ledgers, _ = delegation.SettleMeters(ledgers, q.Spec.Hard.Meters, uid, now, delegation.KeepHeld)
		}
	}
	return ledgers, nil
}

func (r *quotaReconciler) rootGone(ctx context.Context, key types.NamespacedName, uid string) (bool, error) {
	for _, reader := range []client.Reader{r.Client, r.apiReader} {
		var d v1alpha1.Delegation
		switch err := reader.Get(ctx, key, &d); {
		case err == nil && string(d.UID) == uid:
			return false, nil
		case err != nil && !apierrors.IsNotFound(err):
			return false, err
		}
	}
	return true, nil
}

// used counts the namespace's Delegations in flight and waiting for a quota.
func (r *quotaReconciler) used(ctx context.Context, ns string) (v1alpha1.QuotaUsed, error) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{indexQuotaContender: quotaContenderValue},
		client.UnsafeDisableDeepCopy); err != nil {
		return v1alpha1.QuotaUsed{}, err
	}
	var used v1alpha1.QuotaUsed
	for i := range list.Items {
		switch d := &list.Items[i]; {
		case inFlight(d):
			used.InFlight++
		case waitsForQuota(d):
			used.Waiting++
		}
	}
	return used, nil
}

func (r *quotaReconciler) quotasOf(ctx context.Context, o client.Object) []reconcile.Request {
	var quotas v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(quotas.Items))
	for i := range quotas.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])})
	}
	return reqs
}

// usedChanged lets through a quota whose status.used changed: a root
// started or settled in a meter ledger (when its next entry leaves is timed
// anew), or a write of this controller reached the cache. A pass on a cache
// that did not show its last write yet compared the count with an older one
// and may have found nothing to write while the quota showed another count
// (inFlight 2 read, 1 written, 2 counted): the pass after the write
// compares with what was written.
func usedChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.DelegationQuota)
		cur, okCur := e.ObjectNew.(*v1alpha1.DelegationQuota)
		return !okOld || !okCur || !equality.Semantic.DeepEqual(old.Status.Used, cur.Status.Used)
	}}
}

// quotaUse is what of a Delegation status.used counts.
type quotaUse struct{ contender, inFlight, waiting bool }

func quotaUseOf(d *v1alpha1.Delegation) quotaUse {
	c := len(quotaContender(d)) > 0
	return quotaUse{contender: c, inFlight: c && inFlight(d), waiting: c && waitsForQuota(d)}
}

// quotaUseChanged lets through the Delegation events that move status.used.
func quotaUseChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.Delegation)
		cur, okCur := e.ObjectNew.(*v1alpha1.Delegation)
		return !okOld || !okCur || quotaUseOf(old) != quotaUseOf(cur)
	}}
}

// quotaCollector reports every quota's hard limits and use from the cache
// at scrape time.
type quotaCollector struct {
	used, hard *prometheus.Desc
	mu         sync.Mutex
	reader     client.Reader
}

var quotaMetrics = func() *quotaCollector {
	labels := []string{namespaceLabel, "quota", "resource"}
	c := &quotaCollector{
		used: prometheus.NewDesc("tether_quota_used",
			"What a namespace's Delegations hold against a DelegationQuota (status.used), by resource.", labels, nil),
		hard: prometheus.NewDesc("tether_quota_hard", "A DelegationQuota's limits (spec.hard), by resource.", labels, nil),
	}
	metrics.Registry.MustRegister(c)
	return c
}()

func (c *quotaCollector) use(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.used; ch <- c.hard }

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r := c.reader
	c.mu.Unlock()
	var list v1alpha1.DelegationQuotaList
	if r == nil || r.List(context.Background(), &list, client.UnsafeDisableDeepCopy) != nil {
		return
	}
	for i := range list.Items {
		q := &list.Items[i]
		gauge := func(d *prometheus.Desc, resource string, n int32) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n), q.Namespace, q.Name, resource)
		}
		for _, m := range q.Status.Used.Meters {
			ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(m.Used), q.Namespace, q.Name, meterResource(m.Name))
		}
		for _, l := range q.Spec.Hard.Meters {
			ch <- prometheus.MustNewConstMetric(c.hard, prometheus.GaugeValue, float64(l.Limit), q.Namespace, q.Name, meterResource(l.Name))
		}
		gauge(c.used, "inFlight", q.Status.Used.InFlight)
		gauge(c.used, "waiting", q.Status.Used.Waiting)
		for resource, n := range map[string]*int32{"inFlight": q.Spec.Hard.InFlight, "depth": q.Spec.Hard.Depth,
			"childrenPerParent": q.Spec.Hard.ChildrenPerParent} {
			if n != nil {
				gauge(c.hard, resource, *n)
			}
		}
	}
}

// meterResource is a meter's resource label, e.g. meter:tokens (the window
// is the quota's: spec.hard.meters[].window).
func meterResource(name string) string { return "meter:" + name }
