/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// warnShortLease marks a Delegation whose lease.ttl would lapse during a
// leader hand-over, with a Warning event the first time.
func (r *DelegationReconciler) warnShortLease(s *scope) {
	if !delegation.SetLeaseHandOver(s.d, r.Options.MinHandOverTTL, s.now) {
		return
	}
	if meta.FindStatusCondition(s.base.Status.Conditions, delegation.ConditionLeaseHandOver) == nil {
		c := meta.FindStatusCondition(s.d.Status.Conditions, delegation.ConditionLeaseHandOver)
		r.Recorder.Eventf(s.d, nil, "Warning", delegation.ReasonTTLBelowHandOver, "Lease", "%s", c.Message)
	}
}

// runningTasks is what a new leader follows before it reconciles anything:
// every running task in its (warm) cache, read from status. Reconciling a
// whole shard after a take-over takes longer than a short lease lasts (300
// leased tasks, ttl 15 s: 122 lapsed while the new leader worked through
// its queue), so the scheduler renews them all first and the reconciles
// that follow find them followed already.
func (r *DelegationReconciler) runningTasks(ctx context.Context) map[types.NamespacedName]agentio.Follow {
	log := ctrl.LoggerFrom(ctx).WithName("takeover")
	agents := &v1alpha1.AgentList{}
	if err := r.List(ctx, agents); err != nil {
		log.Error(err, "listing Agents from the cache; running tasks are followed as they are reconciled")
		return nil
	}
	byName := make(map[types.NamespacedName]*v1alpha1.Agent, len(agents.Items))
	for i := range agents.Items {
		a := &agents.Items[i]
		byName[client.ObjectKeyFromObject(a)] = a
	}
	list := &v1alpha1.DelegationList{}
	// Read-only: only the task's id, tenant and lease are taken.
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "listing Delegations from the cache; running tasks are followed as they are reconciled")
		return nil
	}
	out := map[types.NamespacedName]agentio.Follow{}
	for i := range list.Items {
		d := &list.Items[i]
		key, ok := d.AgentKey()
		if !ok {
			continue
		}
		agent := byName[key]
		if followed(d, agent) {
			out[client.ObjectKeyFromObject(d)] = r.followOf(d, agent)
		}
	}
	log.Info("following the running tasks of the cache before reconciling", "tasks", len(out))
	return out
}
