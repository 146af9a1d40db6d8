/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// markSend adds the finalizer, the send marker and the send's deadline in
// one optimistic-locked metadata patch: the first write of a plain task,
// and the proof that the pass acts on the latest copy.
func (r *DelegationReconciler) markSend(ctx context.Context, s *scope) error {
	now := metav1.NewTime(s.now.Truncate(time.Second))
	terms := r.sendTerms(s)
	deadline := metav1.NewTime(terms.Deadline)
	err := r.patchMeta(ctx, s, func(d *v1alpha1.Delegation) {
		controllerutil.AddFinalizer(d, v1alpha1.Finalizer)
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[v1alpha1.AnnotationSendStarted] = now.UTC().Format(time.RFC3339)
		d.Annotations[v1alpha1.AnnotationSendDeadline] = deadline.UTC().Format(time.RFC3339)
		// A later attempt's marker names it: the earlier attempt's marker,
		// still in place until this patch, said nothing about this one.
		if n := s.d.Status.Attempt; n > 1 {
			d.Annotations[v1alpha1.AnnotationSendAttempt] = strconv.Itoa(int(n))
		}
	}, &sendMark{started: now, deadline: deadline})
	if err == nil {
		s.sendLeaveBy = terms.LeaveBy
	}
	return err
}

// sendTerms are the terms of a send made now: it leaves by LeaveBy or
// never, and its call ends by Deadline, which is recorded before it leaves.
func (r *DelegationReconciler) sendTerms(s *scope) delegation.SendTerms {
	var asked time.Duration
	if s.agent != nil && s.agent.Spec.RequestTimeout != nil {
		asked = s.agent.Spec.RequestTimeout.Duration
	}
	return delegation.NewSendTerms(s.now, agentio.CallTimeout(asked, r.Calls.MaxCallTimeout))
}

// sendMark is what markSend records of a send, shown in status at once.
type sendMark struct{ started, deadline metav1.Time }

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
func (r *DelegationReconciler) patchMeta(ctx context.Context, s *scope, change func(*v1alpha1.Delegation), mark *sendMark) error {
	status := s.d.Status.DeepCopy()
	base := s.d.DeepCopy()
	change(s.d)
	if err := r.Patch(ctx, s.d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	s.d.Status = *status
	if mark != nil {
		for _, st := range []*v1alpha1.DelegationStatus{&s.d.Status, &s.base.Status} {
			st.SendStarted, st.SendDeadline, st.SendResult = mark.started.DeepCopy(), mark.deadline.DeepCopy(), v1alpha1.SendInFlight
		}
	}
	s.base.ResourceVersion = s.d.ResourceVersion
	s.raw.ResourceVersion = s.d.ResourceVersion
	return nil
}
