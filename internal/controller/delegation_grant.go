/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

// Shared Agents: a Delegation may name an Agent of another namespace when an
// AgentGrant in the Agent's namespace admits the Delegation's (Gateway API's
// ReferenceGrant pattern). The grant is read from the cache in the pass that
// would send, and again as the send leaves the Agent's pool, so a deleted
// grant stops new sends as soon as the cache sees it, also those waiting
// for room; a task already sent goes on (its reads, renewals and cancel are not
// gated): revoking a grant must not lose work already paid for.

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agentgrants,verbs=get;list;watch

// indexSharedAgent holds, for a Delegation naming another namespace's
// Agent, that namespace: a grant there requeues only those Delegations.
const indexSharedAgent = "spec.agentRef.namespace"

func sharedAgentNamespace(o client.Object) []string {
	d := o.(*v1alpha1.Delegation)
	if key, ok := d.AgentKey(); ok && d.SharedAgent() {
		return []string{key.Namespace}
	}
	return nil
}

// agentIndexValue is the indexAgent value of the Agent: its namespace and
// name, so one Agent's users are found across namespaces.
func agentIndexValue(agent types.NamespacedName) string { return agent.String() }

func agentOf(o client.Object) []string {
	if key, ok := o.(*v1alpha1.Delegation).AgentKey(); ok {
		return []string{agentIndexValue(key)}
	}
	return nil
}

// usersOfAgent names the Delegations of every namespace that name the Agent.
func (r *DelegationReconciler) usersOfAgent(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, "", indexAgent, agentIndexValue(client.ObjectKeyFromObject(o)))
}

// usersOfGrant names the Delegations of other namespaces that name an Agent
// of the grant's namespace: a grant created, changed or deleted may admit
// or stop them.
func (r *DelegationReconciler) usersOfGrant(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, "", indexSharedAgent, o.GetNamespace())
}

// errNotGranted keeps a send that waited for room from leaving once its
// grant is gone.
var errNotGranted = errors.New("the send was not made: no AgentGrant admits this namespace to the Agent any more")

// stillGranted is asked as the Delegation's send leaves the Agent's pool
// (agentio.Target.MayStart): a grant revoked while the send waited for room
// stops it. nil for an Agent of the Delegation's own namespace.
func (r *DelegationReconciler) stillGranted(d *v1alpha1.Delegation) func() error {
	if !d.SharedAgent() {
		return nil
	}
	d = d.DeepCopy()
	return func() error {
		if ok, err := r.granted(context.Background(), d); err != nil || !ok {
			return errNotGranted
		}
		return nil
	}
}

// granted reports whether the Delegation may use its Agent: always for an
// Agent of its own namespace, else when an AgentGrant in the Agent's
// namespace admits the Delegation's namespace to it.
func (r *DelegationReconciler) granted(ctx context.Context, d *v1alpha1.Delegation) (bool, error) {
	key, ok := d.AgentKey()
	if !ok || !d.SharedAgent() {
		return true, nil
	}
	var grants v1alpha1.AgentGrantList
	if err := r.List(ctx, &grants, client.InNamespace(key.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range grants.Items {
		if grants.Items[i].Allows(d.Namespace, key.Name) {
			return true, nil
		}
	}
	return false, nil
}
