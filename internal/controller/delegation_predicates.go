/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
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

// enqueueWaiting enqueues the Delegations naming obj (by index) that wait
// in Pending for reason.
func (r *DelegationReconciler) enqueueWaiting(ctx context.Context, ns, field, name, reason string,
	q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{field: name}, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		if o := d.Status.Outcome; o != nil && o.Reason == reason && !delegation.Settled(d.Status.Phase) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(d)})
		}
	}
}
