/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// An orchestrator agent fans out through agentkit.Delegate: the children it
// creates are Delegations the operator sends to the workers, under the
// root's budget.

const orchestratorSpend = 10

// orchestrate serves a worker and an orchestrator (which creates child
// Delegations with the test's client) as Agents "worker" and "orchestrator".
func orchestrate(t *testing.T, e *env) (workers, orch *kitAgent) {
	workers = newKitWorker(t)
	orch = newKitAgent(t, sample.Orchestrator{Kube: k8sClient, WorkerAgent: "worker", Fanout: 1, Spend: orchestratorSpend, Meter: tokens})
	e.createAgent("worker", workers.URL())
	e.createAgent("orchestrator", orch.URL())
	return workers, orch
}

// children lists the Delegations whose parent is name.
func (e *env) children(g Gomega, name string) []v1alpha1.Delegation {
	var list v1alpha1.DelegationList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
	var out []v1alpha1.Delegation
	for _, d := range list.Items {
		if d.Spec.ParentRef != nil && d.Spec.ParentRef.Name == name {
			out = append(out, d)
		}
	}
	return out
}

func TestOrchestratorChargesTheRootWhatTheWorkersSpent(t *testing.T) {
	e := setup(t)
	workers, _ := orchestrate(t, e)
	const n = 3
	e.create(e.kitTask("root", "orchestrator", "summarise fanout=3 steps=2 spend=40 delay=20ms",
		withBudget(v1alpha1.Meters{tokens: 1000})))

	root := e.waitPhase("root", v1alpha1.PhaseSucceeded)
	kids := e.children(e.g, "root")
	e.g.Expect(kids).To(HaveLen(n))
	var reported int64
	share := (int64(1000) - orchestratorSpend) / n
	for _, c := range kids {
		e.g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s", c.Name)
		e.g.Expect(ledger(&c).Granted).To(Equal(v1alpha1.Meters{tokens: share}), "%s got an equal share of what was left", c.Name)
		e.g.Expect(ledger(&c).Reported).To(Equal(v1alpha1.Meters{tokens: 80}), "%s reported two steps of 40", c.Name)
		e.g.Expect(workers.Sends(e.ns, c.Name)).To(HaveLen(1))
		reported += ledger(&c).Reported[tokens]
	}
	e.g.Expect(root.Status.Result.Text).To(ContainSubstring(agentkit.ChildName("root", "part-3") + ": Succeeded"))

	b := ledger(root)
	e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: reported}), "the root is charged what its workers reported")
	e.g.Expect(b.Reported).To(Equal(v1alpha1.Meters{tokens: orchestratorSpend}), "and reports what the orchestrator spent itself")
	e.g.Expect(b.Reservations).To(BeEmpty())
	e.g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 1000 - orchestratorSpend - reported}))
	expectExactLedger(e.g, b)
}

func TestOrchestratorCancelReachesEveryWorker(t *testing.T) {
	e := setup(t)
	workers, orch := orchestrate(t, e)
	const n = 3
	e.create(e.kitTask("root", "orchestrator", "hold fanout=3 "+holdText, withBudget(v1alpha1.Meters{tokens: 1000})))
	rootTask := e.waitRunning("root").Status.TaskID

	tasks := map[string]string{}
	e.g.Eventually(func(g Gomega) {
		kids := e.children(g, "root")
		g.Expect(kids).To(HaveLen(n))
		for _, c := range kids {
			g.Expect(c.Status.Phase).To(Equal(v1alpha1.PhaseRunning), "%s", c.Name)
			g.Expect(c.Status.TaskID).NotTo(BeEmpty())
			tasks[c.Name] = c.Status.TaskID
		}
	}, eventually, tick).Should(Succeed())

	e.update("root", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitReason("root", v1alpha1.PhaseCanceled, delegation.ReasonRequested)
	e.g.Expect(orch.Cancelled(rootTask)).To(BeTrue())
	for name, id := range tasks {
		e.waitReason(name, v1alpha1.PhaseCanceled, delegation.ReasonParentEnded)
		e.g.Eventually(func() bool { return workers.Cancelled(id) }, eventually, tick).Should(BeTrue(), "%s", name)
	}
	// Cancelled children keep what they held.
	share := (int64(1000) - orchestratorSpend) / n
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("root"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: n * share}))
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}
