/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// sendMarker reads the in-flight send marker from the annotation.
func sendMarker(d *v1alpha1.Delegation) *metav1.Time {
	v, ok := d.Annotations[v1alpha1.AnnotationSendStarted]
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		// A marker that cannot be read still says a send may have been made.
		t = d.CreationTimestamp.Time
	}
	mt := metav1.NewTime(t)
	return &mt
}

// hydrateSendStarted shows the annotation's marker as status.sendStarted
// with sendResult InFlight (persisted there with the next status write).
func hydrateSendStarted(d *v1alpha1.Delegation) {
	if d.Status.SendStarted == nil {
		if d.Status.SendStarted = sendMarker(d); d.Status.SendStarted != nil && d.Status.TaskID == "" && d.Status.SendResult == "" {
			d.Status.SendResult = v1alpha1.SendInFlight
		}
	}
}

// markSend adds the finalizer and the send marker in one optimistic-locked
// metadata patch: the first write of a plain task, and the proof that the
// pass acts on the latest copy.
func (r *DelegationReconciler) markSend(ctx context.Context, s *scope) error {
	now := metav1.NewTime(s.now.Truncate(time.Second))
	return r.patchMeta(ctx, s, func(d *v1alpha1.Delegation) {
		controllerutil.AddFinalizer(d, v1alpha1.Finalizer)
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[v1alpha1.AnnotationSendStarted] = now.UTC().Format(time.RFC3339)
	}, &now)
}

// ensureFinalizer adds the finalizer before anything that must be undone on
// deletion (a reservation, a send, an adopted task).
func (r *DelegationReconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.d, v1alpha1.Finalizer) {
		return nil
	}
	return r.patchMeta(ctx, s, func(d *v1alpha1.Delegation) { controllerutil.AddFinalizer(d, v1alpha1.Finalizer) }, nil)
}

// patchMeta patches metadata with an optimistic lock and keeps what this
// pass has set in status (the answer carries the stored status).
func (r *DelegationReconciler) patchMeta(ctx context.Context, s *scope, change func(*v1alpha1.Delegation), sendStarted *metav1.Time) error {
	status := s.d.Status.DeepCopy()
	base := s.d.DeepCopy()
	change(s.d)
	if err := r.Patch(ctx, s.d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	s.d.Status = *status
	if sendStarted != nil {
		s.d.Status.SendStarted, s.d.Status.SendResult = sendStarted, v1alpha1.SendInFlight
		s.base.Status.SendStarted, s.base.Status.SendResult = sendStarted, v1alpha1.SendInFlight
	}
	s.base.ResourceVersion = s.d.ResourceVersion
	s.raw.ResourceVersion = s.d.ResourceVersion
	return nil
}

// sentTerms are what a send was made under, kept in memory from the
// dispatch until its answer is applied: the status record is taken from
// them, not from the object at that time (its send marker may have been
// removed, spec.timeout changed).
type sentTerms struct {
	// marker is the send marker the request was made after.
	marker *metav1.Time
	// deadline is the deadline the agent was given.
	deadline *metav1.Time
}

// recordSentTerms keeps the send marker a send was made after, should the
// annotation be gone by the time its answer is applied (a user removed
// it): the status write that follows records it, and from then on status
// is what says a send was made, so the send is looked up, never made again.
func recordSentTerms(st *v1alpha1.DelegationStatus, sent sentTerms) {
	if st.SendStarted == nil && sent.marker != nil {
		st.SendStarted = sent.marker.DeepCopy()
		if st.TaskID == "" && st.SendResult == "" {
			st.SendResult = v1alpha1.SendInFlight
		}
	}
}
