/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GrantFrom is a namespace whose Delegations may use the granted Agents.
type GrantFrom struct {
	// namespace of the Delegations. The grant admits the namespace as a
	// whole: a Delegation has no identity of its own beyond it (who
	// created it is not recorded), so RBAC on Delegations in that
	// namespace decides who may use the Agent.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
}

// AgentGrantSpec says which Agents of this namespace serve Delegations of
// which other namespaces.
type AgentGrantSpec struct {
	// agents names the Agents of this namespace the grant shares; left out,
	// it shares every Agent of the namespace.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Agents []string `json:"agents,omitempty"`
	// from lists the namespaces whose Delegations may name the Agents in
	// agentRef.namespace.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=namespace
	From []GrantFrom `json:"from"`
}

// AgentGrant lets Delegations of other namespaces use Agents of its own
// namespace (Gateway API's ReferenceGrant pattern: the target's namespace
// consents). The Agents' credentials stay in their namespace; deleting the
// grant stops new sends at once while tasks already sent go on.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=tgrant,categories=tether
// +kubebuilder:printcolumn:name="Agents",type=string,JSONPath=`.spec.agents`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.from[*].namespace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentGrant struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec AgentGrantSpec `json:"spec"`
}

// Allows reports whether the grant lets Delegations of namespace use the
// Agent named agent (of the grant's namespace).
func (g *AgentGrant) Allows(namespace, agent string) bool {
	if len(g.Spec.Agents) > 0 && !slices.Contains(g.Spec.Agents, agent) {
		return false
	}
	for _, f := range g.Spec.From {
		if f.Namespace == namespace {
			return true
		}
	}
	return false
}

// +kubebuilder:object:root=true

// AgentGrantList contains a list of AgentGrant.
type AgentGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentGrant `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &AgentGrant{}, &AgentGrantList{})
		return nil
	})
}
