/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"time"

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

// reconcileDelete sends CancelTask for a task that is still running before
// the finalizer lets go. The retry is bounded by --cancel-timeout from the
// deletion, so a finalizer never holds an object forever. Children were
// already enqueued by the deletionTimestamp and cancel themselves at once.
func (r *DelegationReconciler) reconcileDelete(ctx context.Context, d *v1alpha1.Delegation) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(d, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	now := r.now()
	hydrateSendStarted(d)
	reason := r.deleteReason(ctx, d)
	// A Detach child outlives its parent: the garbage collector deletes the
	// object, but the task is left running and its lease bounds it.
	detached := reason == delegation.ReasonParentDeleted && d.Spec.ParentClosePolicy == v1alpha1.ParentClosePolicyDetach
	if needsCancel(d) && !detached {
		if res, wait := r.cancelBeforeDelete(ctx, d, now); wait {
			return res, nil
		}
		if err := r.recordCanceledOnDelete(ctx, d, reason, now); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.settleDeleted(ctx, d); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(d.DeepCopy())
	controllerutil.RemoveFinalizer(d, v1alpha1.Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, d, patch))
}

// cancelBeforeDelete dispatches CancelTask (unless a cascade already did)
// and waits for its answer, retrying within --cancel-timeout from the
// deletion; then the finalizer lets go with a Warning.
func (r *DelegationReconciler) cancelBeforeDelete(ctx context.Context, d *v1alpha1.Delegation, now time.Time) (ctrl.Result, bool) {
	reason := r.deleteReason(ctx, d)
	s := newScope(d, now)
	if _, err := r.reconcileAgent(ctx, s); err != nil {
		return ctrl.Result{RequeueAfter: time.Second}, true
	}
	if r.settleSend(s) {
		return ctrl.Result{}, true
	}
	elapsed := now.Sub(d.DeletionTimestamp.Time)
	res, answered := r.Calls.Take(callKey(d, agentio.KindCancel))
	if !answered {
		if s.agent == nil {
			res = agentio.Answer{Err: errors.New("the Agent no longer exists")}
		} else {
			if !r.Calls.State(callKey(d, agentio.KindCancel)).Pending {
				r.dispatchCancel(d, s.agent)
			}
			if elapsed < r.Options.CancelTimeout {
				return ctrl.Result{RequeueAfter: r.Options.CancelTimeout - elapsed}, true
			}
			res = agentio.Answer{Err: errors.New("no answer to CancelTask")}
		}
	}
	taskID := d.Status.TaskID
	if taskID == "" {
		taskID = res.TaskID
	}
	lookUpErr := lookUpError(res)
	switch {
	case lookUpErr != nil && elapsed < r.Options.CancelTimeout:
		logf.FromContext(ctx).Info("cannot look up the task to cancel before deletion; retrying", "error", lookUpErr.Error())
		return ctrl.Result{RequeueAfter: min(retryDelay(now, d.DeletionTimestamp.Time), r.Options.CancelTimeout-elapsed)}, true
	case lookUpErr != nil:
		r.Recorder.Eventf(d, nil, "Warning", "CancelUnconfirmed", "Delete",
			"released the finalizer after %s without finding the task of the send: %s", r.Options.CancelTimeout, truncate(lookUpErr.Error(), 700))
		return ctrl.Result{}, false
	case cancelUnconfirmed(res):
		r.Recorder.Eventf(d, nil, "Warning", "CancelUnconfirmed", "Delete",
			"the send may have reached the agent, which cannot list tasks: nothing could be cancelled; a lease, if any, bounds the task")
		return ctrl.Result{}, false
	}
	if res.Err != nil {
		if elapsed < r.Options.CancelTimeout {
			logf.FromContext(ctx).Info("cancel before deletion failed; retrying", "error", res.Err.Error())
			return ctrl.Result{RequeueAfter: min(retryDelay(now, d.DeletionTimestamp.Time), r.Options.CancelTimeout-elapsed)}, true
		}
		r.Recorder.Eventf(d, nil, "Warning", "CancelUnconfirmed", "Delete",
			"released the finalizer after %s without a confirmed cancel of task %s: %s",
			r.Options.CancelTimeout, taskID, truncate(res.Err.Error(), 700))
		return ctrl.Result{}, false
	}
	if taskID != "" {
		if reason == delegation.ReasonParentDeleted {
			cascadeCancels.WithLabelValues(reason).Inc()
		}
		r.Recorder.Eventf(d, nil, "Normal", reason, "Delete", "cancelled task %s before deletion", taskID)
	}
	return ctrl.Result{}, false
}

// recordCanceledOnDelete writes the terminal phase before the finalizer lets
// go: a child whose cascade cancel arrived before its own pass did would
// otherwise vanish while its status still said Running.
func (r *DelegationReconciler) recordCanceledOnDelete(ctx context.Context, d *v1alpha1.Delegation, reason string, now time.Time) error {
	s := newScope(d, now)
	r.setPhase(s, delegation.Canceled(reason, "the task was cancelled because the Delegation was deleted"))
	return r.writeStatus(ctx, s, false)
}

// needsCancel: a task may be running remotely and nothing settled it.
func needsCancel(d *v1alpha1.Delegation) bool {
	if d.Spec.AgentRef == nil || !delegation.Started(&d.Status) {
		return false
	}
	return !delegation.Settled(d.Status.Phase) && !d.Spec.Detach
}

func (r *DelegationReconciler) deleteReason(ctx context.Context, d *v1alpha1.Delegation) string {
	if p := d.Spec.ParentRef; p != nil {
		var parent v1alpha1.Delegation
		err := r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: p.Name}, &parent)
		if err != nil || !parent.DeletionTimestamp.IsZero() {
			return delegation.ReasonParentDeleted
		}
	}
	return delegation.ReasonRequested
}

// settleDeleted takes a deleted child's reservation off its parent's ledger:
// deletion ends it like a cancel, so the whole reservation is kept as spent,
// and the ledger holds entries for live children only. A parent that is
// going away itself is left alone.
func (r *DelegationReconciler) settleDeleted(ctx context.Context, d *v1alpha1.Delegation) error {
	ref := d.Spec.ParentRef
	if ref == nil {
		return nil
	}
	var parent v1alpha1.Delegation
	if err := r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: ref.Name}, &parent); err != nil {
		return client.IgnoreNotFound(err)
	}
	// No check of the cached ledger: it may not show a reservation made a
	// moment ago. The update reads the parent fresh, and settling a child
	// without an entry changes nothing.
	if !parent.DeletionTimestamp.IsZero() {
		return nil
	}
	if owner := metav1.GetControllerOf(d); owner != nil && owner.UID != parent.UID {
		return nil // the parent of that name is another object
	}
	// A group keeps the outcome of a child that ran: deleted while running
	// counts as cancelled. A child deleted before it started leaves none.
	phase := d.Status.Phase
	if !delegation.Settled(phase) {
		phase = v1alpha1.PhaseCanceled
	}
	record := delegation.IsGroup(&parent.Spec) && (delegation.Started(&d.Status) || d.Status.StartTime != nil || delegation.Settled(d.Status.Phase))
	var charged v1alpha1.Meters
	s := &scope{d: d, parentObj: &parent}
	err := r.updateParentStatus(ctx, s, func(st *v1alpha1.DelegationStatus) bool {
		recorded := record && delegation.RecordSettledChild(st, string(d.UID), d.Name, phase)
		if st.Budget == nil {
			return recorded
		}
		return delegation.Settle(st.Budget, string(d.UID), func(reservation v1alpha1.Meters) v1alpha1.Meters {
			charged = reservation
			return reservation
		}) || recorded
	})
	if err == nil {
		addMeters(budgetCharged, charged)
	}
	return client.IgnoreNotFound(err)
}
