/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AnnotationRequestedBy names the user who created a Delegation. The
// chart's admission policies set it from the API request at creation and
// keep it from changing; the approval gate reads it to ignore self-approval.
const AnnotationRequestedBy = "delegation.tether.dev/requested-by"

// AnnotationApprovedBy names the user who created a DelegationApproval, set
// and kept the same way as AnnotationRequestedBy.
const AnnotationApprovedBy = "delegation.tether.dev/approved-by"

// Decision is what a DelegationApproval says of its Delegation.
// +kubebuilder:validation:Enum=Approved;Denied
type Decision string

const (
	DecisionApproved Decision = "Approved"
	DecisionDenied   Decision = "Denied"
)

// DelegationApprovalSpec is one decision about one Delegation.
// +kubebuilder:validation:XValidation:rule="self.decision != 'Denied' || size(self.reason) > 0",message="a denial needs a reason"
type DelegationApprovalSpec struct {
	// delegationName is the Delegation of this namespace decided on. Only
	// a Delegation created before the approval is decided by it: one
	// created again under the same name needs a new decision.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	DelegationName string `json:"delegationName"`
	// decision: Approved sends the Delegation; Denied fails it (reason
	// Denied) with the reason below.
	// +required
	Decision Decision `json:"decision"`
	// reason is the approver's note; the Delegation's message carries it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
}

// DelegationApproval approves or denies a Delegation that waits Pending,
// reason AwaitingApproval (a DelegationQuota's spec.approval thresholds).
// Who may approve is whoever RBAC lets create this object (the
// delegationapproval-approver ClusterRole); its spec cannot change, so the
// object itself is the audit record. When several decide the same
// Delegation, a denial wins.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=tapproval,categories=tether
// +kubebuilder:printcolumn:name="Delegation",type=string,JSONPath=`.spec.delegationName`
// +kubebuilder:printcolumn:name="Decision",type=string,JSONPath=`.spec.decision`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DelegationApproval struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: delete the approval and create another"
	// +required
	Spec DelegationApprovalSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// DelegationApprovalList contains a list of DelegationApproval.
type DelegationApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DelegationApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &DelegationApproval{}, &DelegationApprovalList{})
		return nil
	})
}
