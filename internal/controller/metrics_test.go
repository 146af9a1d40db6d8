/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestMetricsMeasureRequestsPhasesAndCascades(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	// Parallel tests each run an operator; this one counts phases from its own.
	var byPhase *phaseCollector
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		byPhase = &phaseCollector{desc: phaseMetrics.desc, rootBudget: phaseMetrics.rootBudget, reader: r.Client}
	})
	e.createAgent("agent", e.agent.URL())
	e.create(e.task("parent", "wait", withBudget(v1alpha1.Meters{"tokens": 1000})))
	e.waitRunning("parent")
	e.create(e.task("child", "wait", childOf("parent"), withBudget(v1alpha1.Meters{"tokens": 300}), withLease(3*time.Second)))
	e.waitRunning("child")
	// The scheduler reads running tasks every pollInterval; the cancel
	// waits for one read, so GetTask is measured however fast this runs.
	e.g.Eventually(func() int { return len(e.agent.Calls("GetTask")) }, eventually, tick).Should(BeNumerically(">=", 1))

	// A running root reports its ledger per meter; its child holds 300.
	rootSeries := func(field string) string {
		return `tether_root_budget_` + field + `{meter="tokens",namespace="` + e.ns + `",root="parent"} `
	}
	e.g.Eventually(func() string {
		out, _ := testutil.CollectAndFormat(byPhase, expfmt.TypeTextPlain, "tether_root_budget_granted", "tether_root_budget_reserved", "tether_root_budget_spent")
		return string(out)
	}, eventually, tick).Should(And(ContainSubstring(rootSeries("granted")+"1000"), ContainSubstring(rootSeries("reserved")+"300"),
		ContainSubstring(rootSeries("spent")+"0")))
	// The leased child's reads are renewals, each timed against when it was due.
	e.g.Eventually(func() uint64 { return latenessCount(e.g, e.ns+"/agent", "renewal") }, eventually, tick).Should(BeNumerically(">=", 1))

	e.update("parent", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("child", v1alpha1.PhaseCanceled)

	agent := e.ns + "/agent"
	e.g.Expect(requestSeries(e.g, agent)).To(BeNumerically(">=", 3),
		"SendMessage, GetTask and CancelTask were measured for this agent")
	e.g.Expect(testutil.ToFloat64(cascadeCancels.WithLabelValues("ParentEnded"))).To(BeNumerically(">=", 1))

	// The phase gauge counts from the cache at scrape time.
	e.g.Eventually(func() string {
		out, _ := testutil.CollectAndFormat(byPhase, expfmt.TypeTextPlain, "tether_delegations")
		return string(out)
	}, eventually, tick).Should(ContainSubstring(`tether_delegations{namespace="` + e.ns + `",phase="Canceled",reason=""} 2`))
	// A settled root is no longer reported.
	out, err := testutil.CollectAndFormat(byPhase, expfmt.TypeTextPlain, "tether_root_budget_granted")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(string(out)).NotTo(ContainSubstring(`root="parent"`))
}

// latenessCount is how many scheduled reads of one kind were timed for an agent.
func latenessCount(g Gomega, agent, read string) uint64 {
	mfs, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != "tether_scheduled_read_lateness_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["agent"] == agent && labels["read"] == read {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// requestSeries counts the tether_a2a_request_duration_seconds series of
// one agent (one per method and outcome) on the operator's registry.
func requestSeries(g Gomega, agent string) int {
	mfs, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "tether_a2a_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "agent" && l.GetValue() == agent {
					n++
				}
			}
		}
	}
	return n
}
