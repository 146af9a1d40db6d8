/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// Deletion is a phase list of the same reconcile (see Reconcile): the same
// scope, the same deferred status write. A task that may still run is
// cancelled by the path every cancel takes (cancelTask), bounded by
// --cancel-timeout from the deletion, so a finalizer never holds an object
// forever; its phase is written before the finalizer lets go. Children were
// already enqueued by the deletionTimestamp and cancel themselves at once.

// cancelOnDelete cancels the task of a Delegation being deleted, when
// delegation.OnDelete says one may run; the pass ends here until the
// cancel settled it.
func (r *DelegationReconciler) cancelOnDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	step, ok := delegation.OnDelete(s.observation())
	if !ok {
		return ctrl.Result{}, nil
	}
	res, err := r.cancelTask(ctx, s, step)
	if err != nil || !delegation.Settled(s.d.Status.Phase) {
		s.done = true
		return res, err
	}
	if st := &s.d.Status; st.TaskID != "" && st.Outcome.Reason == step.Outcome.Reason {
		if step.Outcome.Reason == delegation.ReasonParentDeleted {
			cascadeCancels.WithLabelValues(step.Outcome.Reason).Inc()
		}
		r.Recorder.Eventf(s.d, nil, "Normal", step.Outcome.Reason, "Delete", "cancelled task %s before deletion", st.TaskID)
	}
	return ctrl.Result{}, nil
}

// releaseFinalizer charges the parent for a task that settled in this
// pass, writes the phase, takes the Delegation off its parent's ledger and
// lets the object go.
func (r *DelegationReconciler) releaseFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if delegation.Settled(s.d.Status.Phase) {
		if err := r.chargeParent(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	// A child whose cascade cancel arrived before its own pass did would
	// otherwise vanish while its status still said Running. A pass that
	// changed nothing writes nothing: the conditions' observedGeneration
	// alone (the deletion bumped the generation) is not worth a write of an
	// object about to go.
	if !equality.Semantic.DeepEqual(s.base.Status, s.d.Status) {
		if err := r.writeStatus(ctx, s, false); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.settleDeleted(ctx, s.d); err != nil {
		return ctrl.Result{}, err
	}
	s.done, s.skipStatus = true, true
	return ctrl.Result{}, removeFinalizer(ctx, r.Client, s.d, v1alpha1.Finalizer)
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
