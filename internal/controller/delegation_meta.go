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
