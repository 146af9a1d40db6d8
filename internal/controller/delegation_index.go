/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Field indexes that let a change to one object requeue the objects naming it.
const (
	indexParent = "spec.parentRef.name"
	indexAgent  = "spec.agentRef.name"
	// indexWaiting holds only Delegations waiting in Pending for room
	// (see waitingFor).
	indexWaiting = "status.waitingFor"
)

func (r *DelegationReconciler) byIndex(field string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.requestsFor(ctx, o.GetNamespace(), field, o.GetName())
	}
}

// requestsFor names the cached Delegations of a namespace whose index field
// holds value; only their keys are read, so nothing is copied.
func (r *DelegationReconciler) requestsFor(ctx context.Context, ns, field, value string) []reconcile.Request {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
