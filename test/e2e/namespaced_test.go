/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The chart installed with watchNamespaces: the operator's permissions are a
// Role in the watched namespace and nothing cluster-wide, and that is enough
// for a Delegation there to complete. A namespace it does not watch is left
// alone.
func TestNamespacedInstall(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	runID := newRunID()
	watched, unwatched := "tether-e2e-team-a-"+runID, "tether-e2e-team-b-"+runID
	newNamespace(t, watched)
	newNamespace(t, unwatched)
	// Push on too, so its flags meet the real binary.
	r := installChart(t, "tether-ns", "tether-e2e-ns-system-"+runID, "watchNamespaces={"+watched+"}", "push.enabled=true")

	role := &rbacv1.Role{}
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: watched, Name: "tether-ns-manager"}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal(markerRules(t)))
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: watched, Name: "tether-ns-manager"}, &rbacv1.RoleBinding{})).To(Succeed())
	for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
		err := kube.Get(ctx, client.ObjectKey{Name: "tether-ns-manager"}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a namespaced install must not grant cluster-wide access (%T: %v)", obj, err)
	}
	g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: unwatched, Name: "tether-ns-manager"}, &rbacv1.Role{})).NotTo(Succeed())

	op := startOperator(t, r)
	url, _ := startWorker(t)
	elsewhere := newWorkspace(t, unwatched)
	elsewhere.createAgent("worker", url)
	elsewhere.task("ignored", "steps=1 delay=10ms", "")

	w := newWorkspace(t, watched)
	w.deleteDelegationsOnCleanup()
	w.createAgent("worker", url)
	w.waitAgentReady("worker")
	w.task("task", "steps=1 delay=50ms", "")
	d := w.waitPhase("task", v1alpha1.PhaseSucceeded)
	g.Expect(d.Status.Result.Text).To(ContainSubstring("worker did 1 steps"))

	// Created before the watched one succeeded, so an operator that saw it
	// would have added its finalizer by now.
	ignored := elsewhere.get("ignored")
	g.Expect(ignored.Finalizers).To(BeEmpty())
	g.Expect(ignored.Status.Phase).To(BeEmpty())

	expectNoForbidden(t, op)
}
