/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Letting go from a copy read before another controller added its own
// finalizer fails with a conflict instead of dropping that finalizer; from
// a fresh copy only the operator's finalizer goes. (A ConfigMap stands in
// for the object: no controller of the suite acts on it.)
func TestFinalizerRemovalKeepsAnotherControllersFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const other = "example.com/keep"
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: newNamespace(t), Name: "held",
		Finalizers: []string{v1alpha1.Finalizer}}}
	g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	stale := obj.DeepCopy()

	obj.Finalizers = append(obj.Finalizers, other)
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())

	err := removeFinalizer(ctx, k8sClient, stale, v1alpha1.Finalizer)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a removal from a stale copy: %v", err)
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(ConsistOf(v1alpha1.Finalizer, other))

	g.Expect(removeFinalizer(ctx, k8sClient, obj, v1alpha1.Finalizer)).To(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	g.Expect(obj.Finalizers).To(ConsistOf(other))

	obj.Finalizers = nil
	g.Expect(k8sClient.Update(ctx, obj)).To(Succeed())
}
