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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The cache holds a settled Delegation without its result, its message's
// text and kubectl's last-applied copy, and the writes the operator makes
// after the settle (here the observed generation of a cancel) leave all of
// them on the API server.
func TestCacheDropsWhatASettledDelegationNoLongerNeeds(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	var cached client.Reader
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) { cached = r.Client })
	e.createAgent("agent", e.agent.URL())
	d := e.task("hello", "hello there")
	d.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{"message":{"text":"hello there"}}}`}
	e.create(d)
	settled := e.waitPhase("hello", v1alpha1.PhaseSucceeded)
	e.g.Expect(settled.Status.Result).NotTo(BeNil())

	var inCache v1alpha1.Delegation
	e.g.Eventually(func(g Gomega) {
		g.Expect(cached.Get(context.Background(), clientKey(settled), &inCache)).To(Succeed())
		g.Expect(inCache.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, eventually, tick).Should(Succeed())
	e.g.Expect(inCache.Status.Result).To(BeNil())
	e.g.Expect(inCache.Spec.Message).NotTo(BeNil())
	e.g.Expect(inCache.Spec.Message.Text).To(BeEmpty())
	e.g.Expect(inCache.Annotations).NotTo(HaveKey(corev1.LastAppliedConfigAnnotation))
	e.g.Expect(inCache.ManagedFields).To(BeEmpty())

	e.update("hello", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.g.Eventually(func(g Gomega) {
		now := e.get("hello")
		g.Expect(now.Status.ObservedGeneration).To(Equal(now.Generation))
		g.Expect(now.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(now.Status.Result).To(Equal(settled.Status.Result))
		g.Expect(now.Spec.Message.Text).To(Equal("hello there"))
		g.Expect(now.Annotations).To(HaveKey(corev1.LastAppliedConfigAnnotation))
	}, eventually, tick).Should(Succeed())
}
