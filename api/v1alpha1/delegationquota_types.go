/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// QuotaLimits are the limits a DelegationQuota holds a namespace's
// Delegations to. A limit left out does not apply.
// +kubebuilder:validation:MinProperties=1
type QuotaLimits struct {
	// inFlight is how many Delegations of the namespace may have a task
	// sent and not settled at once. More wait Pending (QuotaExceeded) and
	// start in creation order as room frees.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	InFlight *int32 `json:"inFlight,omitempty"`
	// depth is how many levels of children a tree may have below its root
	// (a root is at depth 0, its children at 1), counted like --max-depth.
	// A Delegation deeper than this never starts: it waits Pending
	// (OverQuotaLimit, holding no place in the inFlight queue) until the
	// quota is raised or it is deleted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	Depth *int32 `json:"depth,omitempty"`
	// childrenPerParent is how many children of one parent may start (in
	// any phase since, while they exist). The others wait Pending
	// (ChildrenPerParentExceeded, holding no place in the inFlight queue),
	// oldest first, until one of the started is deleted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	ChildrenPerParent *int32 `json:"childrenPerParent,omitempty"`
	// maxBudget is the most of each meter one Delegation's
	// spec.budget.meters may ask, e.g. tokens: 50000. It holds no matter
	// what is in use: the chart's admission policy refuses a Delegation
	// asking more, and the operator holds one that got past it Pending
	// (OverQuotaLimit). A Delegation that asks nothing of a meter is not
	// limited by it.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="maxBudget meters must not be negative"
	// +optional
	MaxBudget map[string]int64 `json:"maxBudget,omitempty"`
	// maxAttempts is the most one Delegation's spec.retry.maxAttempts may
	// ask; refused at admission and held (OverQuotaLimit) like maxBudget.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MaxAttempts *int32 `json:"maxAttempts,omitempty"`
	// meters cap what the namespace's root Delegations may spend of a
	// budget meter over a rolling window, e.g. tokens: 100000 per 24h. A
	// root counts its budget for the meter from its start, and what it was
	// charged once it settled. A root over the limit, or without a budget
	// for the meter, waits Pending (QuotaExceeded).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Meters []MeterLimit `json:"meters,omitempty"`
}

// MeterLimit caps one budget meter over a rolling window.
type MeterLimit struct {
	// name is the meter as spec.budget.meters names it, e.g. tokens.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`
	// limit is the most the namespace's root budgets may hold and spend of
	// the meter within any one window.
	// +kubebuilder:validation:Minimum=1
	Limit int64 `json:"limit"`
	// window is the rolling window, from 1m to 720h (30 days), e.g. 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="meters[].window must be between 1m and 720h (30 days)"
	Window metav1.Duration `json:"window"`
}

// DelegationQuotaSpec holds the limits.
type DelegationQuotaSpec struct {
	// hard are the limits. Several quotas in a namespace all apply: the
	// tightest holds.
	// +required
	Hard QuotaLimits `json:"hard"`
	// approval names thresholds past which a Delegation of the namespace
	// waits Pending (AwaitingApproval) until a DelegationApproval decides.
	// +optional
	Approval *ApprovalThresholds `json:"approval,omitempty"`
}

// ApprovalThresholds are what makes a Delegation need a DelegationApproval
// before it is sent: any one crossed is enough. A threshold left out does
// not apply.
// +kubebuilder:validation:MinProperties=1
type ApprovalThresholds struct {
	// depthAbove: a Delegation deeper than this (a root is at depth 0)
	// needs approval.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	DepthAbove *int32 `json:"depthAbove,omitempty"`
	// agents: a Delegation to one of these Agents (by name) needs approval.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Agents []string `json:"agents,omitempty"`
	// meters: a Delegation whose spec.budget.meters asks more of a meter
	// than this needs approval, e.g. tokens: 100000.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="approval meters must not be negative"
	// +optional
	Meters map[string]int64 `json:"meters,omitempty"`
	// allowSelfApproval lets an approval count when it was made by the
	// user who created the Delegation (the delegation.tether.dev/approved-by
	// and requested-by annotations the chart's admission policies stamp).
	// By default such an approval is ignored and the Delegation waits for
	// someone else's.
	// +optional
	AllowSelfApproval bool `json:"allowSelfApproval,omitempty"`
}

// QuotaUsed is what the namespace's Delegations hold now, recomputed from
// the operator's cache on every change (exact across restarts).
type QuotaUsed struct {
	// inFlight: Delegations of the namespace with a task sent and not settled.
	InFlight int32 `json:"inFlight"`
	// waiting: Delegations of the namespace waiting Pending (QuotaExceeded
	// or ChildrenPerParentExceeded).
	Waiting int32 `json:"waiting"`
	// meters is the ledger of each meter of spec.hard.meters: what the
	// namespace's roots hold and spent within its window.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Meters []MeterUse `json:"meters,omitempty"`
}

// MaxMeterRoots bounds how many roots in flight one meter's ledger records;
// a root finding it full waits, Pending (QuotaExceeded), until one settles.
// Settled roots are folded into entries per window/MeterBuckets when the
// ledger fills, so the ledger stays below MaxMeterRoots + 2*MeterBuckets.
const (
	MaxMeterRoots = 500
	MeterBuckets  = 50
)

// MeterUse is one meter's ledger in a rolling window.
type MeterUse struct {
	// name of the meter (spec.hard.meters[].name).
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// used is the sum of the charges within the window when status was
	// last written.
	Used int64 `json:"used"`
	// charges are the roots counted: one entry per root (by uid) from its
	// start, settled when it settles; an entry without uid sums settled
	// roots of one slice of the window. A settled entry leaves the ledger
	// one window after its time.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=600
	// +optional
	Charges []MeterCharge `json:"charges,omitempty"`
}

// MeterCharge is what one root (or several settled ones) counts.
type MeterCharge struct {
	// uid of the root Delegation; empty for a sum of settled roots.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	UID string `json:"uid,omitempty"`
	// root is the root Delegation's name, so a root deleted before it
	// settled is found gone (it keeps its budget as its charge).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Root string `json:"root,omitempty"`
	// at is when the root started (for a sum, the end of its slice).
	At metav1.Time `json:"at"`
	// amount is the root's budget for the meter until it settles, then what
	// it was charged.
	Amount int64 `json:"amount"`
	// settled: amount is final.
	// +optional
	Settled bool `json:"settled,omitempty"`
}

// DelegationQuotaStatus reports use against the limits.
type DelegationQuotaStatus struct {
	// used is what the namespace holds now.
	// +optional
	Used QuotaUsed `json:"used,omitempty"`
	// observedGeneration is the generation of spec.hard the status was
	// computed under.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DelegationQuota caps what a namespace's Delegations hold at once
// (ResourceQuota's pattern: hard limits in spec, use in status). A
// Delegation over quota waits Pending, reason QuotaExceeded, and starts
// when room frees; it never fails for it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tquota,categories=tether
// +kubebuilder:printcolumn:name="In Flight",type=integer,JSONPath=`.status.used.inFlight`
// +kubebuilder:printcolumn:name="Hard In Flight",type=integer,JSONPath=`.spec.hard.inFlight`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.used.waiting`
// +kubebuilder:printcolumn:name="Depth",type=integer,JSONPath=`.spec.hard.depth`,priority=1
// +kubebuilder:printcolumn:name="Children",type=integer,JSONPath=`.spec.hard.childrenPerParent`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DelegationQuota struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec DelegationQuotaSpec `json:"spec"`
	// +optional
	Status DelegationQuotaStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DelegationQuotaList contains a list of DelegationQuota.
type DelegationQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DelegationQuota `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &DelegationQuota{}, &DelegationQuotaList{})
		return nil
	})
}
