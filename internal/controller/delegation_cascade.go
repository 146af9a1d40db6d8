/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// cascadeCancel dispatches CancelTask for every unsettled descendant of a
// parent that is deleted, cancelled, ended or expired, straight from the
// cache and through each Agent's pool, without waiting for any write. The
// descendants' own passes take the results and write their status at the
// client's rate; their finalizers then only confirm. A Detach child and
// its subtree are left alone.
func (r *DelegationReconciler) cascadeCancel(ctx context.Context, root *v1alpha1.Delegation, reason string) {
	if !r.memory.cascaded.first(client.ObjectKeyFromObject(root), root.UID) {
		return
	}
	agents := map[types.NamespacedName]*v1alpha1.Agent{}
	queue := []*v1alpha1.Delegation{root}
	seen := map[types.UID]bool{root.UID: true} // parentRefs may form a cycle
	sent := 0
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		var list v1alpha1.DelegationList
		if err := r.List(ctx, &list, client.InNamespace(parent.Namespace), client.MatchingFields{indexParent: parent.Name}); err != nil {
			return
		}
		for i := range list.Items {
			child := &list.Items[i]
			if owner := controllerOf(child); owner != "" && owner != parent.UID {
				continue // a child of an earlier object of the same name
			}
			if seen[child.UID] || child.Spec.ParentClosePolicy == v1alpha1.ParentClosePolicyDetach || child.Spec.Detach {
				continue
			}
			seen[child.UID] = true
			queue = append(queue, child)
			if r.dispatchChildCancel(ctx, child, agents) {
				r.memory.cascaded.record(client.ObjectKeyFromObject(child), reason)
				sent++
			}
		}
	}
	if sent > 0 {
		logf.FromContext(ctx).V(1).Info("dispatched cancels for the subtree", "reason", reason, "tasks", sent)
	}
}

func (r *DelegationReconciler) dispatchChildCancel(ctx context.Context, child *v1alpha1.Delegation,
	agents map[types.NamespacedName]*v1alpha1.Agent) bool {
	hydrateSendStarted(child)
	if child.Spec.AgentRef == nil || delegation.Settled(child.Status.Phase) {
		return false
	}
	// Also a child not sent yet, as far as this cache shows: from now on its
	// send never leaves (the Dispatcher refuses a send while a cancel of its
	// Delegation is on its way), and a send on its way is waited for.
	key, _ := child.AgentKey()
	agent, ok := agents[key]
	if !ok {
		agent = &v1alpha1.Agent{}
		if err := r.Get(ctx, key, agent); err != nil {
			agent = nil
		}
		agents[key] = agent
	}
	if agent == nil {
		return false
	}
	return r.dispatchCancel(child, agent)
}

// cascadeStep is the cancel a cascade started for this Delegation, if any.
func (r *DelegationReconciler) cascadeStep(d *v1alpha1.Delegation) (delegation.Step, bool) {
	reason, ok := r.memory.cascaded.reason(client.ObjectKeyFromObject(d), false)
	if !ok {
		return delegation.Step{}, false
	}
	msg := "the parent ended before this task settled"
	if reason == delegation.ReasonParentDeleted {
		msg = "the parent is being deleted"
	}
	return delegation.Step{Kind: delegation.StepCancel, Phase: v1alpha1.PhaseCanceled,
		Outcome: v1alpha1.Outcome{Reason: reason, Message: msg}}, true
}

func controllerOf(d *v1alpha1.Delegation) types.UID {
	for _, o := range d.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.UID
		}
	}
	return ""
}
