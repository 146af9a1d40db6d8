/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// notOwnStatusWrite lets every change through except a write of status
// alone: the pass that wrote it already acted on it, and waking the object
// again would only read what it wrote.
func notOwnStatusWrite() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld, e.ObjectNew
		return old.GetGeneration() != cur.GetGeneration() ||
			!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp()) ||
			!equality.Semantic.DeepEqual(old.GetAnnotations(), cur.GetAnnotations()) ||
			!equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) ||
			!equality.Semantic.DeepEqual(old.GetFinalizers(), cur.GetFinalizers()) ||
			!equality.Semantic.DeepEqual(old.GetOwnerReferences(), cur.GetOwnerReferences())
	}}
}

// budgetOnly: of what children act on, only the parent's ledger moved.
func budgetOnly(old, cur *v1alpha1.Delegation) bool {
	return old.DeletionTimestamp.IsZero() == cur.DeletionTimestamp.IsZero() &&
		old.Status.Phase == cur.Status.Phase &&
		old.Status.Deadline.Equal(cur.Status.Deadline)
}

// waitingFor is the indexWaiting value of a Delegation that waits for
// room: the reason and what it waits on (its parent's budget, its Agent's
// places). Only such Delegations are in that index, so waking them costs
// what is waiting, not every sibling.
func waitingFor(d *v1alpha1.Delegation) []string {
	o := d.Status.Outcome
	if o == nil || delegation.Settled(d.Status.Phase) {
		return nil
	}
	switch {
	case o.Reason == delegation.ReasonBudgetExhausted && d.Spec.ParentRef != nil:
		return []string{waitingKey(o.Reason, d.Spec.ParentRef.Name)}
	case o.Reason == delegation.ReasonAgentAtCapacity && d.Spec.AgentRef != nil:
		agent, _ := d.AgentKey()
		return []string{waitingKey(o.Reason, agentIndexValue(agent))}
	case o.Reason == delegation.ReasonChildrenPerParentExceeded && d.Spec.ParentRef != nil:
		// A sibling deleted frees its place; a quota changed may let
		// every one go.
		return []string{waitingKey(o.Reason, d.Spec.ParentRef.Name), waitingKey(o.Reason, "")}
	case o.Reason == delegation.ReasonQuotaExceeded, o.Reason == delegation.ReasonAwaitingApproval,
		o.Reason == delegation.ReasonOverQuotaLimit:
		// Any place freed in the namespace may be its; a quota's
		// thresholds or limits changed may let it go.
		return []string{waitingKey(o.Reason, "")}
	}
	return nil
}

func waitingKey(reason, name string) string { return reason + "/" + name }

// enqueueWaiting enqueues the Delegations of a namespace that wait for
// reason on name (a parent or an Agent).
func (r *DelegationReconciler) enqueueWaiting(ctx context.Context, ns, reason, name string,
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range r.requestsFor(ctx, ns, indexWaiting, waitingKey(reason, name)) {
		q.Add(req)
	}
}

// enqueueWaitingForAgent enqueues the Delegations of every namespace that
// wait for a place at the Agent (a shared Agent's places are shared).
func (r *DelegationReconciler) enqueueWaitingForAgent(ctx context.Context, agent types.NamespacedName,
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.enqueueWaiting(ctx, "", delegation.ReasonAgentAtCapacity, agentIndexValue(agent), q)
}

// agentChanged lets an Agent event through unless only its refresh time
// moved: a card read that found nothing new must not wake every
// Delegation of the Agent.
func agentChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.Agent)
		cur, okCur := e.ObjectNew.(*v1alpha1.Agent)
		if !okOld || !okCur {
			return true
		}
		oldStatus, curStatus := old.Status, cur.Status
		oldStatus.LastRefreshTime, curStatus.LastRefreshTime = nil, nil
		return old.Generation != cur.Generation ||
			!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
			!equality.Semantic.DeepEqual(old.Finalizers, cur.Finalizers) ||
			!equality.Semantic.DeepEqual(oldStatus, curStatus)
	}}
}

// resultPriority puts a Delegation woken by a send's answer ahead of new
// and changed objects in the work queue: an answer applied late is a task
// followed late, and its lease may lapse meanwhile. Only sends' answers go
// first: they come no faster than new objects are handled, so they cannot
// starve them (a steady stream of reads could).
const resultPriority = 10

// enqueueFirst enqueues the object of a generic event at resultPriority.
func enqueueFirst() handler.Funcs {
	return handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(resultPriority)}, req)
			return
		}
		q.Add(req)
	}}
}
