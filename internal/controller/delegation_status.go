/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/tracing"
)

// writeStatus derives the conditions and patches status when something a
// user can see changed; observedGeneration only moves after a clean pass.
func (r *DelegationReconciler) writeStatus(ctx context.Context, s *scope, clean bool) error {
	d := s.d
	if clean {
		d.Status.ObservedGeneration = d.Generation
	}
	delegation.SetConditions(d, s.now)
	r.warnShortLease(s)
	if equality.Semantic.DeepEqual(s.base.Status, d.Status) {
		return nil
	}
	// The lock makes a pass that read a stale copy fail instead of acting on
	// it: a reply is only made after its claim was written this way.
	if err := r.Status().Patch(ctx, d, client.MergeFromWithOptions(s.raw, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	r.recordTransition(s.base, d)
	if !s.base.Status.Phase.Settled() && d.Status.Phase.Settled() {
		tracing.RecordSettled(ctx, r.Client, d)
	}
	s.base = d.DeepCopy()
	s.raw = d.DeepCopy()
	return nil
}

// persistStatus writes status now (before a send) instead of at the end.
func (r *DelegationReconciler) persistStatus(ctx context.Context, s *scope) error {
	return r.writeStatus(ctx, s, false)
}

// recordTransition emits one Event per phase change.
func (r *DelegationReconciler) recordTransition(before, after *v1alpha1.Delegation) {
	if before.Status.Phase == after.Status.Phase || after.Status.Phase == "" {
		return
	}
	reason, note, kind := string(after.Status.Phase), "", "Normal"
	if o := after.Status.Outcome; o != nil {
		note = o.Message
		if o.Reason != "" {
			reason = o.Reason
		}
	}
	if after.Status.Phase == v1alpha1.PhaseFailed || after.Status.Phase == v1alpha1.PhaseCanceled {
		kind = "Warning"
	}
	// The API server refuses Event notes over 1024 bytes.
	r.Recorder.Eventf(after, nil, kind, reason, string(after.Status.Phase), "%s", truncate(string(after.Status.Phase)+": "+note, 1024))
}

// setPhase records a decision: the one place status.phase and
// status.outcome are written. The start time and deadline are fixed when
// the Delegation first leaves Pending, the completion time when it settles.
func (r *DelegationReconciler) setPhase(s *scope, rec delegation.Record) {
	st := &s.d.Status
	if rec.Phase != v1alpha1.PhasePending && st.StartTime == nil {
		r.markStarted(s)
	}
	st.Phase = rec.Phase
	out := rec.Outcome
	out.Message = truncate(out.Message, maxOutcomeMessage) // agents write what they like
	st.Outcome = &out
	if delegation.Settled(rec.Phase) && st.CompletionTime == nil {
		now := metav1.NewTime(s.now)
		st.CompletionTime = &now
	}
	if delegation.Settled(rec.Phase) && !s.settling {
		s.settling = true
		wasSettled := delegation.Settled(s.base.Status.Phase)
		s.afterWrite = append(s.afterWrite, func(ctx context.Context) { r.settled(ctx, s, wasSettled) })
	}
}

// settled runs once the settled status is written: a cascade's reason for
// this Delegation is no longer needed, and a parent that just ended cancels
// its children's tasks at once.
func (r *DelegationReconciler) settled(ctx context.Context, s *scope, wasSettled bool) {
	if !delegation.Settled(s.d.Status.Phase) {
		return
	}
	r.memory.cascaded.reason(client.ObjectKeyFromObject(s.d), true)
	if !wasSettled {
		r.cascadeCancel(ctx, s.d, delegation.ReasonParentEnded)
	}
}

func (r *DelegationReconciler) markStarted(s *scope) {
	st := &s.d.Status
	// A task starts when its send was recorded, so every pass derives the
	// same start time and deadline from the marker.
	now := metav1.NewTime(s.now)
	if st.SendStarted != nil {
		now = *st.SendStarted
	}
	st.StartTime = &now
	delegation.StartAttempts(st, s.observation().Retry)
	r.grantOwnBudget(s)
	var parentDeadline time.Time
	if s.parent != nil {
		parentDeadline = s.parent.Deadline
	}
	if d := delegation.Deadline(&s.d.Spec, parentDeadline, now.Time); !d.IsZero() {
		dl := metav1.NewTime(d)
		st.Deadline = &dl
	}
}
