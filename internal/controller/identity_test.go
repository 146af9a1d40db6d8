/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// An orchestrator agent serves two namespaces. A Delegation of one cannot
// make it create children in the other: admission refuses the identity key
// in message metadata, the operator writes its own claim last, and a message
// sent to the agent directly with a claim it cannot prove creates nothing.
func TestAClaimOnAnotherNamespaceCreatesNothingThere(t *testing.T) {
	e := setup(t)
	_, orch := orchestrate(t, e)
	ctx := context.Background()
	victim := newNamespace(t)
	root := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "root"},
		Spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: v1alpha1.Meters{tokens: 1000}}}}
	e.g.Expect(k8sClient.Create(ctx, root)).To(Succeed())
	claim := map[string]string{tethera2a.DelegationMetadataKey: victim + "/root"}

	// Through the operator: the claim never reaches the agent.
	spoof := e.kitTask("spoof", "orchestrator", "summarise fanout=1", func(d *v1alpha1.Delegation) { d.Spec.Message.Metadata = claim })
	e.g.Expect(k8sClient.Create(ctx, spoof)).To(MatchError(ContainSubstring("metadata keys under https://tether.dev/ are reserved for the operator")))
	req := (&DelegationReconciler{}).sendRequest(&scope{d: spoof}, "ctx")
	e.g.Expect(req.Metadata).To(HaveKeyWithValue(tethera2a.DelegationMetadataKey, e.ns+"/spoof"),
		"even a claim past admission is overwritten by the operator's")

	// Directly at the agent: the message id is not the one the operator
	// derives from the victim's Delegation, so agentkit refuses the claim.
	c, err := tethera2a.Dial(ctx, tethera2a.Endpoint{URL: orch.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	task, err := c.Send(ctx, tethera2a.SendRequest{MessageID: "forged-1", Text: "summarise fanout=2",
		Metadata: map[string]any{tethera2a.DelegationMetadataKey: victim + "/root"}})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Eventually(func(g Gomega) tethera2a.State {
		got, err := c.Get(ctx, task.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		task = got
		return got.State
	}, eventually, tick).Should(Equal(tethera2a.StateFailed))
	e.g.Expect(task.StatusText).To(ContainSubstring("not the named Delegation's"))
	var list v1alpha1.DelegationList
	e.g.Expect(k8sClient.List(ctx, &list, client.InNamespace(victim))).To(Succeed())
	e.g.Expect(list.Items).To(HaveLen(1), "only the victim's root: nothing was created there")

	// The operator's own claim is proven: the same agent works for its namespace.
	e.create(e.kitTask("legit", "orchestrator", "summarise fanout=1", withBudget(v1alpha1.Meters{tokens: 1000})))
	e.waitPhase("legit", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.children(e.g, "legit")).To(HaveLen(1))
}
