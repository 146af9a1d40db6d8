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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// The chart installed with default values: a ClusterRole from the RBAC
// markers, and the operator, acting as the chart's ServiceAccount, takes
// Delegations through their whole life without being refused anything.
func TestClusterWideInstall(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	ownsCRDs := !crdsInstalled(t)
	runID := newRunID()
	r := installChart(t, "tether", "tether-e2e-system-"+runID, "cancelTimeout=20s")

	t.Run("ClusterRoleFromMarkers", func(t *testing.T) {
		g := NewWithT(t)
		role := &rbacv1.ClusterRole{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Name: "tether-manager"}, role)).To(Succeed())
		g.Expect(role.Rules).To(Equal(markerRules(t)))
		binding := &rbacv1.ClusterRoleBinding{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Name: "tether-manager"}, binding)).To(Succeed())
		g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "tether", Namespace: r.namespace}))
	})

	t.Run("UpgradeKeepsManagingCRDs", func(t *testing.T) {
		if !ownsCRDs {
			t.Skip("the CRDs were there before; this release does not manage them")
		}
		g := NewWithT(t)
		helm(t, "upgrade", r.name, chartDir, "--namespace", r.namespace, "--reuse-values")
		for _, name := range []string{"agents.delegation.tether.dev", "delegations.delegation.tether.dev"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(kube.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			g.Expect(crd.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", r.name))
			g.Expect(crd.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
		}
	})

	workNS := "tether-e2e-work-" + runID
	newNamespace(t, workNS)
	w := newWorkspace(t, workNS)
	op := startOperator(t, r)
	url, worker := startWorker(t)
	w.deleteDelegationsOnCleanup()

	t.Log("creating Agent worker at " + url)
	w.createAgent("worker", url)
	w.waitAgentReady("worker")

	t.Run("ThreeLevelTreeLeafCompletes", func(t *testing.T) {
		w := newWorkspace(t, workNS)
		w.task("root", "forever", "")
		w.task("mid", "forever", "root")
		w.task("leaf", "steps=1 delay=50ms", "mid")
		leaf := w.waitPhase("leaf", v1alpha1.PhaseSucceeded)
		w.g.Expect(leaf.Status.Result).NotTo(BeNil())
		w.g.Expect(leaf.Status.Result.Text).To(ContainSubstring("worker did 1 steps"))
		for child, parent := range map[string]string{"mid": "root", "leaf": "mid"} {
			owner := metav1.GetControllerOf(w.get(child))
			w.g.Expect(owner).NotTo(BeNil(), "%s has no controller owner", child)
			w.g.Expect(owner.Name).To(Equal(parent))
			w.g.Expect(owner.BlockOwnerDeletion).To(Equal(ptr.To(true)))
		}
		w.waitPhase("root", v1alpha1.PhaseRunning)
		w.waitPhase("mid", v1alpha1.PhaseRunning)
	})

	t.Run("CancelRequested", func(t *testing.T) {
		w := newWorkspace(t, workNS)
		w.task("cancel-me", "forever", "")
		task := w.waitPhase("cancel-me", v1alpha1.PhaseRunning).Status.TaskID
		w.update("cancel-me", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		d := w.waitPhase("cancel-me", v1alpha1.PhaseCanceled)
		w.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRequested))
		w.g.Eventually(worker.Log).WithTimeout(timeout).Should(ContainSubstring(cancelledAtAgent(task)),
			"the worker never got CancelTask")
	})

	t.Run("DeletingParentCancelsThenCollectsChildren", func(t *testing.T) {
		w := newWorkspace(t, workNS)
		if _, err := w.getIfExists("mid"); err != nil {
			t.Skip("needs the tree of ThreeLevelTreeLeafCompletes")
		}
		tasks := map[string]string{"root": w.get("root").Status.TaskID, "mid": w.get("mid").Status.TaskID}
		w.g.Expect(w.get("mid").Finalizers).To(ContainElement(v1alpha1.Finalizer))
		seen := w.watchHistory()
		t.Log("deleting root; the garbage collector deletes mid and leaf")
		w.g.Expect(kube.Delete(ctx, w.get("root"))).To(Succeed())
		for _, name := range []string{"root", "mid", "leaf"} {
			w.waitGone(name) // gone: every finalizer was released
		}
		w.g.Expect(seen.of("mid")).To(ContainElement(outcome{Phase: v1alpha1.PhaseCanceled, Reason: delegation.ReasonParentDeleted}),
			"mid should have been cancelled because its parent was deleted")
		for name, task := range tasks {
			w.g.Expect(worker.Log()).To(ContainSubstring(cancelledAtAgent(task)), "%s's task was not cancelled at the agent", name)
		}
	})

	expectNoForbidden(t, op)
	g.Expect(op.Log()).To(ContainSubstring("Successfully acquired lease"), "the operator log does not show leader election")
}

// cancelledAtAgent is the line the sample worker logs when CancelTask
// reaches it for a task.
func cancelledAtAgent(task string) string {
	return `msg="task cancelled" task=` + task
}
