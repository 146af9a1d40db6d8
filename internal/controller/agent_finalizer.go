/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// An Agent is what a cancel needs: its endpoint and credentials. When a
// namespace is deleted, or a GitOps tool prunes in any order, the Agent may
// go before the Delegations that still have tasks at it, and every cancel
// would fail until --cancel-timeout. Like a PersistentVolumeClaim in use, an
// Agent with unsettled Delegations is therefore held by a finalizer, and let
// go as soon as none is left.

// reconcileFinalizer adds the Agent's finalizer, and on deletion releases it
// once no unsettled Delegation has a task at the Agent. done ends the pass.
func (r *AgentReconciler) reconcileFinalizer(ctx context.Context, agent *v1alpha1.Agent) (done bool, res ctrl.Result, err error) {
	if agent.DeletionTimestamp.IsZero() {
		if base := agent.DeepCopy(); controllerutil.AddFinalizer(agent, v1alpha1.AgentFinalizer) {
			return true, ctrl.Result{}, r.Patch(ctx, agent, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		}
		return false, ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(agent, v1alpha1.AgentFinalizer) {
		return true, ctrl.Result{}, nil
	}
	users, err := r.unsettledUsers(ctx, agent)
	if err != nil {
		return true, ctrl.Result{}, err
	}
	if users > 0 {
		// Deletion bumps the generation; the spec (and the endpoint read for
		// it) did not change, so the endpoint stays usable for the cancels.
		if agent.Status.ObservedGeneration != agent.Generation {
			base := agent.DeepCopy()
			agent.Status.ObservedGeneration = agent.Generation
			if err := r.Status().Patch(ctx, agent, client.MergeFrom(base)); err != nil {
				return true, ctrl.Result{}, client.IgnoreNotFound(err)
			}
		}
		// Settling Delegations wake the Agent; the requeue is a safety net.
		return true, ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	return true, ctrl.Result{}, removeFinalizer(ctx, r.Client, agent, v1alpha1.AgentFinalizer)
}

// unsettledUsers counts the Delegations that may have a task at the Agent
// and have not settled (a cancel may still be needed).
func (r *AgentReconciler) unsettledUsers(ctx context.Context, agent *v1alpha1.Agent) (int, error) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.MatchingFields{indexAgent: agentIndexValue(client.ObjectKeyFromObject(agent))}); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if d := &list.Items[i]; delegation.MayRun(&d.Spec, &d.Status) {
			n++
		}
	}
	return n, nil
}

// deletingAgentOf wakes a deleting Agent when one of its Delegations changes
// or goes; Agents that are not being deleted are left alone (their
// reconcile reads the card).
func (r *AgentReconciler) deletingAgentOf(ctx context.Context, o client.Object) []reconcile.Request {
	d, ok := o.(*v1alpha1.Delegation)
	if !ok {
		return nil
	}
	key, ok := d.AgentKey()
	if !ok {
		return nil
	}
	var agent v1alpha1.Agent
	if err := r.Get(ctx, key, &agent); err != nil || agent.DeletionTimestamp.IsZero() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}
