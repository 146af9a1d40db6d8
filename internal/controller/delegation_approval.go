/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

// Approvals: before a Delegation's send, the approval thresholds of its
// namespace's DelegationQuotas are asked, and the DelegationApprovals naming
// it (delegation.ApprovalGate decides). It runs before the quota gate and
// the parent's budget reservation, so one that waits or is denied holds
// nothing.

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegationapprovals,verbs=get;list;watch

// indexApprovalFor holds a DelegationApproval's spec.delegationName.
const indexApprovalFor = "approval.delegation"

func approvalFor(o client.Object) []string {
	return []string{o.(*v1alpha1.DelegationApproval).Spec.DelegationName}
}

// admitApproval keeps a Delegation Pending (reason AwaitingApproval) while
// it crosses an approval threshold no DelegationApproval has decided, and
// fails it (reason Denied) when one denied it; the record is returned.
func (r *DelegationReconciler) admitApproval(ctx context.Context, s *scope) (*delegation.Record, error) {
	var quotas v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(s.d.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var views []delegation.Quota
	needDepth := false
	for i := range quotas.Items {
		if a := quotas.Items[i].Spec.Approval; a != nil {
			views = append(views, delegation.Quota{Name: quotas.Items[i].Name, Approval: a})
			needDepth = needDepth || a.DepthAbove != nil
		}
	}
	if len(views) == 0 {
		return nil, nil
	}
	ask := delegation.ApprovalAsk{Name: s.d.Name, Created: s.d.CreationTimestamp.Time, Agent: s.d.Spec.AgentRef.Name,
		RequestedBy: s.d.Annotations[v1alpha1.AnnotationRequestedBy]}
	if b := s.d.Spec.Budget; b != nil {
		ask.Meters = b.Meters
	}
	if needDepth {
		ask.Depth = r.treeDepth(ctx, s.d)
	}
	var approvals v1alpha1.DelegationApprovalList
	if err := r.List(ctx, &approvals, client.InNamespace(s.d.Namespace), client.MatchingFields{indexApprovalFor: s.d.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	decided := make([]delegation.Decided, 0, len(approvals.Items))
	for i := range approvals.Items {
		a := &approvals.Items[i]
		decided = append(decided, delegation.Decided{Name: a.Name, Created: a.CreationTimestamp.Time, Decision: a.Spec.Decision,
			Reason: a.Spec.Reason, ApprovedBy: a.Annotations[v1alpha1.AnnotationApprovedBy]})
	}
	v := delegation.ApprovalGate(views, ask, decided)
	if !v.Send {
		if len(v.Ignored) > 0 && (s.d.Status.Outcome == nil || s.d.Status.Outcome.Message != v.Record.Outcome.Message) {
			r.Recorder.Eventf(s.d, nil, "Warning", delegation.ReasonSelfApprovalIgnored, "Approve",
				"an approval by the requester does not count: DelegationApproval %q by %s", v.Ignored[len(v.Ignored)-1], ask.RequestedBy)
		}
		return &v.Record, nil
	}
	if v.By != "" && s.d.Status.Outcome != nil && s.d.Status.Outcome.Reason == delegation.ReasonAwaitingApproval {
		r.Recorder.Eventf(s.d, nil, "Normal", delegation.ReasonApproved, "Approve", "approved by DelegationApproval %q", v.By)
	}
	return nil, nil
}

// decidedDelegation names the Delegation a DelegationApproval decides.
func decidedDelegation(_ context.Context, o client.Object) []reconcile.Request {
	a := o.(*v1alpha1.DelegationApproval)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.DelegationName}}}
}
