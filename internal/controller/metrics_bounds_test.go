/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestBoundedLabelsHandOutAtMostTheLimit(t *testing.T) {
	g := NewWithT(t)
	b := &boundedLabels{limit: 3, other: "other"}
	g.Expect([]string{b.of("a"), b.of("b"), b.of("a"), b.of("other"), b.of("c"), b.of("d"), b.of("b")}).
		To(Equal([]string{"a", "b", "a", "other", "c", "other", "b"}))
}

// 1,000 distinct meter names, reserved through 63 trees, leave the budget
// counters with a bounded number of series.
func TestMeterNamesLeaveTheSeriesCountBounded(t *testing.T) {
	e := setup(t)
	const trees, perTree = 63, 16 // 1,008 names
	create := func(d *v1alpha1.Delegation, wg *sync.WaitGroup) {
		wg.Go(func() { e.g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed()) })
	}
	var wg sync.WaitGroup
	for i := range trees {
		meters := v1alpha1.Meters{}
		for j := range perTree {
			meters[fmt.Sprintf("m%03d-%02d", i, j)] = 10
		}
		create(e.group(fmt.Sprintf("root-%02d", i), meters), &wg)
	}
	wg.Wait()
	for i := range trees {
		meters := v1alpha1.Meters{}
		for j := range perTree {
			meters[fmt.Sprintf("m%03d-%02d", i, j)] = 1
		}
		child := e.group(fmt.Sprintf("child-%02d", i), meters)
		childOf(fmt.Sprintf("root-%02d", i))(child)
		create(child, &wg)
	}
	wg.Wait()
	e.g.Eventually(func(g Gomega) {
		var list v1alpha1.DelegationList
		g.Expect(k8sClient.List(context.Background(), &list)).To(Succeed())
		started := 0
		for _, d := range list.Items {
			if d.Namespace == e.ns && d.Spec.ParentRef != nil && d.Status.StartTime != nil {
				started++
			}
		}
		g.Expect(started).To(Equal(trees), "every child reserved from its root")
	}, 3*eventually, tick).Should(Succeed())

	for _, c := range []*struct {
		name string
		n    int
	}{{"reserved", testutil.CollectAndCount(budgetReserved)}, {"charged", testutil.CollectAndCount(budgetCharged)},
		{"refunded", testutil.CollectAndCount(budgetRefunded)}} {
		e.g.Expect(c.n).To(BeNumerically("<=", maxMeterLabels+1), "tether_budget_%s_total series", c.name)
	}
	e.g.Expect(testutil.ToFloat64(budgetReserved.WithLabelValues(otherMeter))).To(BeNumerically(">=", trees*perTree-maxMeterLabels),
		"names past the bound are counted under %q", otherMeter)
}

// An Agent's request series go when the Agent goes.
func TestDeletedAgentsLeaveNoSeries(t *testing.T) {
	e := setup(t)
	const n = 5
	for i := range n {
		name := fmt.Sprintf("agent-%d", i)
		e.createAgent(name, e.agent.URL())
		d := e.task(fmt.Sprintf("echo-%d", i), "hello")
		d.Spec.AgentRef.Name = name
		e.create(d)
	}
	for i := range n {
		e.waitPhase(fmt.Sprintf("echo-%d", i), v1alpha1.PhaseSucceeded)
		e.g.Expect(requestSeries(e.g, fmt.Sprintf("%s/agent-%d", e.ns, i))).To(BeNumerically(">=", 1))
	}
	for i := range n {
		a := &v1alpha1.Agent{}
		e.g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: fmt.Sprintf("agent-%d", i)}, a)).To(Succeed())
		e.g.Expect(k8sClient.Delete(context.Background(), a)).To(Succeed())
	}
	for i := range n {
		e.g.Eventually(func() int { return requestSeries(e.g, fmt.Sprintf("%s/agent-%d", e.ns, i)) }, eventually, tick).Should(BeZero())
	}
	e.g.Expect(requestSeries(e.g, e.ns+"/agent")).To(BeZero(), "an Agent never called has none either")
}
