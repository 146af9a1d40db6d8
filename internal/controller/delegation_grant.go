/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

// Shared Agents: a Delegation may name an Agent of another namespace when an
// AgentGrant in the Agent's namespace admits the Delegation's (Gateway API's
// ReferenceGrant pattern). The grant is read from the cache in the pass that
// would send, so a deleted grant stops new sends as soon as the cache sees
// it; a task already sent goes on (its reads, renewals and cancel are not
// gated): revoking a grant must not lose work already paid for.

import (
	"context"

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
