/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// scope is what one reconcile pass observed and is changing.
type scope struct {
	d    *v1alpha1.Delegation
	base *v1alpha1.Delegation // status as last written (with the send marker shown)
	raw  *v1alpha1.Delegation // status as stored: what a status patch starts from
	now  time.Time

	// skipStatus: nothing worth a write happened yet (a call is on its way;
	// its answer brings the next write).
	skipStatus bool
	// changed: the object is not the version this process last handled
	// (someone else wrote it, or the process started).
	changed bool
	// taken are the call results this pass applied.
	taken []takenResult
	// seen is the Fingerprint of the task report applied in this pass.
	seen string
	// sendLeaveBy is when the send this pass dispatches must have left by
	// (its recorded deadline counts from it).
	sendLeaveBy time.Time
	// answeredAt is when the latest call taken in this pass was answered:
	// a task's first renewal is due one interval after the send's answer,
	// however long the answer waited to be applied.
	answeredAt time.Time

	parent    *delegation.Parent
	parentObj *v1alpha1.Delegation // nil when there is no parent (or it is gone)
	// groupsAbove are the specs of the groups above the parent that a task
	// without a retry policy inherits one through (inheritedRetry).
	groupsAbove []*v1alpha1.DelegationSpec
	// leaseRenewed is when the agent last answered for the followed task
	// (the scheduler's; zero when not followed).
	leaseRenewed time.Time
	agent        *v1alpha1.Agent
	agentObs     delegation.Agent
	treeErr      string
	children     v1alpha1.ChildCounts
	// done ends the pass early (the object changed under us).
	done bool
	// afterWrite is what steps left for after the pass's status write
	// landed (finishPass runs it; a failed pass drops it).
	afterWrite []func(context.Context)
	// settling: a step of this pass settled the Delegation (setPhase).
	settling bool
}

func newScope(d *v1alpha1.Delegation, now time.Time) *scope {
	raw := d.DeepCopy()
	hydrateSendStarted(d)
	return &scope{d: d, base: d.DeepCopy(), raw: raw, now: now}
}

func (s *scope) observation() delegation.Observation {
	groups := s.groupsAbove
	if s.parentObj != nil {
		groups = append([]*v1alpha1.DelegationSpec{&s.parentObj.Spec}, groups...)
	}
	return delegation.Observation{
		Now: s.now, Spec: &s.d.Spec, Status: &s.d.Status, Parent: s.parent, Agent: s.agentObs,
		TreeError: s.treeErr, Children: s.children, Retry: delegation.RetryPolicy(&s.d.Spec, groups...),
		LeaseRenewed: s.leaseRenewed,
	}
}

// reconcileParent observes the parent, sets the ownerReference (GitOps never
// needs to know a UID) and checks the chain for cycles and depth.
func (r *DelegationReconciler) reconcileParent(ctx context.Context, s *scope) (ctrl.Result, error) {
	ref := s.d.Spec.ParentRef
	if ref == nil {
		return ctrl.Result{}, nil
	}
	var parent v1alpha1.Delegation
	err := r.Get(ctx, types.NamespacedName{Namespace: s.d.Namespace, Name: ref.Name}, &parent)
	if apierrors.IsNotFound(err) {
		s.parent = &delegation.Parent{}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.parent = &delegation.Parent{Found: true, Deleting: !parent.DeletionTimestamp.IsZero(), Phase: parent.Status.Phase}
	s.parentObj = &parent
	if parent.Status.Deadline != nil {
		s.parent.Deadline = parent.Status.Deadline.Time
	}
	owner := metav1.GetControllerOf(s.d)
	if owner != nil && owner.UID != parent.UID {
		// A child recreated under a new parent of the same name: the old
		// parent is gone, and so is this task's reason to run. It is never
		// adopted by the new parent object.
		s.parent, s.parentObj = &delegation.Parent{}, nil
		return ctrl.Result{}, nil
	}
	s.parent.Owns = owner != nil
	s.groupsAbove = r.inheritedRetry(ctx, s.d, &parent)
	if !s.d.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // going away: only the parent's state matters
	}
	if s.d.Status.StartTime == nil { // checked once, before anything starts
		s.treeErr = r.checkChain(ctx, s.d)
	}
	if metav1.GetControllerOf(s.d) == nil && !s.parent.Deleting {
		patch := client.MergeFrom(s.d.DeepCopy())
		if err := controllerutil.SetControllerReference(&parent, s.d, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Patch(ctx, s.d, patch); err != nil {
			return ctrl.Result{}, err
		}
		// Status writes are locked on the version they start from.
		s.base.ResourceVersion = s.d.ResourceVersion
		s.raw.ResourceVersion = s.d.ResourceVersion
	}
	return ctrl.Result{}, nil
}

// checkChain walks up parentRefs and reports a cycle or a chain deeper than
// --max-depth.
func (r *DelegationReconciler) checkChain(ctx context.Context, d *v1alpha1.Delegation) string {
	seen := map[string]bool{d.Name: true}
	cur := d
	for depth := 1; cur.Spec.ParentRef != nil; depth++ {
		if depth > r.Options.MaxDepth {
			return fmt.Sprintf("the parentRef chain is deeper than %d", r.Options.MaxDepth)
		}
		name := cur.Spec.ParentRef.Name
		if seen[name] {
			return fmt.Sprintf("the parentRef chain has a cycle through %q", name)
		}
		seen[name] = true
		var next v1alpha1.Delegation
		if err := r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: name}, &next); err != nil {
			return "" // a missing ancestor is waited for, not an error
		}
		cur = &next
	}
	return ""
}

// inheritedRetry walks up from a task's parent through groups that set no
// retry policy, to the nearest that does (delegation.RetryPolicy decides):
// the specs above the parent. Only a task without a policy of its own
// inherits, and only the groups in between are read (from the cache).
func (r *DelegationReconciler) inheritedRetry(ctx context.Context, d, parent *v1alpha1.Delegation) []*v1alpha1.DelegationSpec {
	if d.Spec.Retry != nil || delegation.IsGroup(&d.Spec) {
		return nil
	}
	var above []*v1alpha1.DelegationSpec
	seen := map[string]bool{d.Name: true, parent.Name: true}
	for cur := parent; delegation.InheritsFurther(&cur.Spec) && len(above) < r.Options.MaxDepth; {
		name := cur.Spec.ParentRef.Name
		var next v1alpha1.Delegation
		if seen[name] || r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: name}, &next) != nil {
			break // a cycle (checkChain reports it) or a missing ancestor: nothing more to inherit
		}
		seen[name] = true
		above = append(above, &next.Spec)
		cur = &next
	}
	return above
}

// reconcileAgent observes the Agent the task goes to.
func (r *DelegationReconciler) reconcileAgent(ctx context.Context, s *scope) (ctrl.Result, error) {
	key, ok := s.d.AgentKey()
	if !ok {
		return ctrl.Result{}, nil
	}
	// Another namespace's Agent is used only under a grant; a task already
	// sent is still read and cancelled without one (Gate gates starts only).
	granted, err := r.granted(ctx, s.d)
	if err != nil {
		// The cache holds no namespace this operator does not watch
		// (watchNamespaces, another shard): nothing there grants anything.
		logf.FromContext(ctx).V(1).Info("reading the AgentGrants of the Agent's namespace", "agent", key.String(), "error", err.Error())
		s.agentObs.NotGranted = true
		return ctrl.Result{}, nil
	}
	s.agentObs.NotGranted = !granted
	var agent v1alpha1.Agent
	err = r.Get(ctx, key, &agent)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.agent = &agent
	// A deleting Agent serves the tasks it has (cancels, polls) but starts none.
	s.agentObs = delegation.Agent{NotGranted: !granted, Found: true, CanList: agentio.CanList(&agent),
		Ready: meta.IsStatusConditionTrue(agent.Status.Conditions, "Ready") && agent.DeletionTimestamp.IsZero()}
	return ctrl.Result{}, nil
}

// reconcileChildren counts the children for status and for groups.
func (r *DelegationReconciler) reconcileChildren(ctx context.Context, s *scope) (ctrl.Result, error) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(s.d.Namespace), client.MatchingFields{indexParent: s.d.Name}); err != nil {
		return ctrl.Result{}, err
	}
	live := make([]delegation.ChildView, 0, len(list.Items))
	for i := range list.Items {
		child := &list.Items[i]
		if owner := metav1.GetControllerOf(child); owner != nil && owner.UID != s.d.UID {
			continue // a child of an earlier object of the same name
		}
		live = append(live, delegation.ChildView{UID: string(child.UID), Phase: child.Status.Phase})
	}
	// Children that settled and were deleted count by their recorded outcome.
	c, n := delegation.CountChildren(live, s.d.Status.SettledChildren)
	s.children = c
	if n == 0 {
		s.d.Status.Children = nil
	} else {
		s.d.Status.Children = &c
	}
	return ctrl.Result{}, nil
}

type takenResult struct {
	key agentio.Key
	res agentio.Answer
}
