/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

// Deleting a namespace deletes its Agents, Secrets and Delegations in no
// particular order. With the real namespace controller of
// kube-controller-manager: every running task is cancelled, with the
// credentials it was sent with although their Secret went first, and the
// namespace is gone in seconds, not after --cancel-timeout.
func TestDeletingANamespaceCancelsEveryRunningTask(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	cl, err := cluster.Start(ctx, cluster.Options{BinDir: os.Getenv("KUBEBUILDER_ASSETS"), Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cl.Stop() })
	restConfig := cl.Config()
	_, err = envtest.InstallCRDs(restConfig, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	agent := newTestAgent()
	t.Cleanup(agent.Close)
	// The Agent's credentials come from a Secret that the namespace
	// controller deletes with everything else; clients are rebuilt on every
	// call, so only the operator's kept client can still cancel with them.
	opts := testOptions()
	opts.CancelTimeout = 2 * time.Minute
	startOperatorOn(t, restConfig, ns.Name, opts, func(r *DelegationReconciler) { r.Connector.ClientTTL = time.Millisecond })
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "creds",
		Labels: map[string]string{AgentCredentialsLabel: "true"}},
		StringData: map[string]string{"token": "Bearer s3cret"}})).To(Succeed())
	g.Expect(c.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "agent"}, Spec: v1alpha1.AgentSpec{
		URL: agent.URL(), PollInterval: &metav1.Duration{Duration: 2 * time.Second},
		Headers: []v1alpha1.AgentHeader{{Name: "Authorization", ValueFrom: v1alpha1.SecretKeyRef{Name: "creds", Key: "token"}}},
	}})).To(Succeed())

	const n = 50
	for i := range n {
		g.Expect(c.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("task-%02d", i)},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "wait"}}})).To(Succeed())
	}
	var tasks []string
	g.Eventually(func(g Gomega) {
		var list v1alpha1.DelegationList
		g.Expect(c.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
		tasks = make([]string, 0, len(list.Items))
		for _, d := range list.Items {
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning), d.Name)
			tasks = append(tasks, d.Status.TaskID)
		}
		g.Expect(tasks).To(HaveLen(n))
	}, 2*eventually, tick).Should(Succeed())

	start := time.Now()
	g.Expect(c.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
	}, 2*eventually, tick).Should(BeTrue(), "the namespace is gone well before --cancel-timeout")
	t.Logf("namespace with %d running Delegations deleted in %s", n, time.Since(start).Round(time.Millisecond))

	cancels := map[string]string{}
	for _, call := range agent.Calls("CancelTask") {
		cancels[call.TaskID] = call.Auth
	}
	for _, id := range tasks {
		g.Expect(cancels).To(HaveKeyWithValue(id, "Bearer s3cret"), "task %s was cancelled with its credentials", id)
	}
}
