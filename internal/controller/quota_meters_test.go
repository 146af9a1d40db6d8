/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// Meters per rolling window, on the real API server with agents that report
// what they spent.

func tokensPerDayQuota(limit int64) v1alpha1.QuotaLimits {
	return v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{{Name: tokens, Limit: limit, Window: metav1.Duration{Duration: 24 * time.Hour}}}}
}

// meterLedger is the quota's ledger of the meter as the API server has it.
func (e *env) meterLedger(quota, meter string) v1alpha1.MeterUse {
	for _, m := range e.quotaUsed(quota)().Meters {
		if m.Name == meter {
			return m
		}
	}
	return v1alpha1.MeterUse{Name: meter}
}

func (e *env) meterUsed(quota, meter string) func() int64 {
	return func() int64 { return e.meterLedger(quota, meter).Used }
}

// A window full of the roots' budgets holds the next root Pending
// (QuotaExceeded) with nothing sent, older roots first; a root without a
// budget for the meter never starts; a root that settles having spent less
// than its budget gives the rest back and the waiting roots start.
func TestQuotaMetersWindowFullWaitsAndASettleFreesRoom(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.waitAgentReady("kit")
	e.createQuota("team", tokensPerDayQuota(100))

	// r1 holds 60 while it waits for input.
	e.create(e.kitTask("r1", "kit", "ask steps=1 spend=5", withBudget(v1alpha1.Meters{tokens: 60})))
	e.waitPhase("r1", v1alpha1.PhaseInputRequired)
	e.g.Eventually(e.meterUsed("team", tokens), eventually, tick).Should(Equal(int64(60)), "a root counts its budget from its start")
	e.create(e.kitTask("r2", "kit", holdText, withBudget(v1alpha1.Meters{tokens: 50})))
	d := e.waitReason("r2", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team": tokens 60/100 in 24h, budget 50; waiting in creation order`))
	time.Sleep(1100 * time.Millisecond) // a later creation second: r3 is younger than r2
	e.create(e.group("r3", v1alpha1.Meters{tokens: 30}))
	d = e.waitReason("r3", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(
		`DelegationQuota "team": tokens 60/100 in 24h, budget 30, 50 asked by older roots; waiting in creation order`),
		"a root group counts too, after the older root")
	e.create(e.kitTask("free", "kit", holdText))
	d = e.waitReason("free", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(
		`DelegationQuota "team": tokens is limited per 24h; a root Delegation needs spec.budget.meters.tokens to start`))
	e.g.Expect(ka.Sends(e.ns, "r2")).To(BeEmpty(), "nothing is sent over quota")

	// The reply lets r1 finish; it spends 5 of its 60: the window holds 5,
	// and r2 and r3 fit.
	e.update("r1", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "go on"}) })
	e.waitPhase("r1", v1alpha1.PhaseSucceeded)
	e.waitRunning("r2")
	e.waitPhase("r3", v1alpha1.PhaseRunning)
	e.g.Eventually(e.meterUsed("team", tokens), eventually, tick).Should(Equal(int64(85)))
	e.g.Expect(e.get("free").Status.Outcome.Reason).To(Equal(delegation.ReasonQuotaExceeded))
	e.g.Expect(ka.Sends(e.ns, "free")).To(BeEmpty())

	metricsOut, err := testutil.CollectAndFormat(&quotaCollector{used: quotaMetrics.used, hard: quotaMetrics.hard, reader: k8sClient},
		expfmt.TypeTextPlain, "tether_quota_used", "tether_quota_hard")
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(string(metricsOut)).To(ContainSubstring(`tether_quota_used{namespace="` + e.ns + `",quota="team",resource="meter:tokens"} 85`))
	e.g.Expect(string(metricsOut)).To(ContainSubstring(`tether_quota_hard{namespace="` + e.ns + `",quota="team",resource="meter:tokens"} 100`))

	// A cancelled group that spent nothing gives its whole budget back.
	e.update("r3", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.g.Eventually(e.meterUsed("team", tokens), eventually, tick).Should(Equal(int64(55)))

	// A root deleted while it runs keeps its whole budget as its charge.
	r2 := e.get("r2").UID
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("r2"))).To(Succeed())
	e.g.Eventually(func() []v1alpha1.MeterCharge { return e.meterLedger("team", tokens).Charges }, eventually, tick).Should(ContainElement(
		And(HaveField("UID", string(r2)), HaveField("Root", "r2"), HaveField("Amount", int64(50)), HaveField("Settled", true))))
	e.g.Expect(e.meterUsed("team", tokens)()).To(Equal(int64(55)))
}

// A deleted root's charge stays in the window, and the ledger is the same
// after the operator restarts: nothing is counted twice or lost.
func TestQuotaMetersDeletedRootStillCountsAndLedgerSurvivesRestart(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.waitAgentReady("kit")
	e.createQuota("team", tokensPerDayQuota(100))

	e.create(e.kitTask("done", "kit", "steps=1 spend=7 delay=10ms", withBudget(v1alpha1.Meters{tokens: 40})))
	e.create(e.kitTask("held", "kit", holdText, withBudget(v1alpha1.Meters{tokens: 50})))
	e.waitPhase("done", v1alpha1.PhaseSucceeded)
	e.waitRunning("held")
	e.g.Eventually(e.meterUsed("team", tokens), eventually, tick).Should(Equal(int64(57)))
	doneUID := e.get("done").UID

	e.g.Expect(k8sClient.Delete(context.Background(), e.get("done"))).To(Succeed())
	e.g.Eventually(func() bool { return e.gone("done") }, eventually, tick).Should(BeTrue())
	e.create(e.kitTask("next", "kit", holdText, withBudget(v1alpha1.Meters{tokens: 45})))
	d := e.waitReason("next", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team": tokens 57/100 in 24h, budget 45; waiting in creation order`),
		"the deleted root's 7 still count")
	before := e.meterLedger("team", tokens)
	e.g.Expect(before.Charges).To(ContainElement(And(
		HaveField("UID", string(doneUID)), HaveField("Amount", int64(7)), HaveField("Settled", true))))

	e.op.Stop()
	e.op = startOperator(t, e.ns, testOptions())
	e.g.Consistently(func() v1alpha1.MeterUse { return e.meterLedger("team", tokens) }, 2*time.Second, tick).
		Should(Equal(before), "a new process finds the same ledger and adds nothing")
	e.g.Expect(e.get("next").Status.Outcome.Reason).To(Equal(delegation.ReasonQuotaExceeded))
	e.g.Expect(ka.Sends(e.ns, "next")).To(BeEmpty())

	// A cancelled task keeps its whole budget as spent: the room stays taken.
	e.update("held", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("held", v1alpha1.PhaseCanceled)
	e.g.Consistently(e.meterUsed("team", tokens), time.Second, tick).Should(Equal(int64(57)))
	e.g.Expect(e.get("next").Status.Outcome.Reason).To(Equal(delegation.ReasonQuotaExceeded))

	// Raising the limit starts it.
	e.updateQuota("team", func(q *v1alpha1.DelegationQuota) { q.Spec.Hard.Meters[0].Limit = 102 })
	e.waitRunning("next")
	e.g.Eventually(e.meterUsed("team", tokens), eventually, tick).Should(Equal(int64(102)))
}

// Bad meter limits are refused by the API server.
func TestQuotaMetersAdmission(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	limit := func(name string, n int64, window time.Duration) v1alpha1.QuotaLimits {
		return v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{{Name: name, Limit: n, Window: metav1.Duration{Duration: window}}}}
	}
	for name, c := range map[string]struct {
		hard v1alpha1.QuotaLimits
		msg  string
	}{
		"short window": {limit(tokens, 1, 59*time.Second), "meters[].window must be between 1m and 720h (30 days)"},
		"long window":  {limit(tokens, 1, 721*time.Hour), "meters[].window must be between 1m and 720h (30 days)"},
		"zero limit":   {limit(tokens, 0, time.Hour), "spec.hard.meters[0].limit: Invalid value: 0"},
		"bad name":     {limit("to kens", 1, time.Hour), "spec.hard.meters[0].name: Invalid value"},
		"empty list":   {v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{}}, "spec.hard"},
	} {
		err := k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"}, Spec: v1alpha1.DelegationQuotaSpec{Hard: c.hard}})
		g.Expect(err).To(HaveOccurred(), name)
		g.Expect(err.Error()).To(ContainSubstring(c.msg), name)
	}
	g.Expect(k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: limit(tokens, 1, 720*time.Hour)}})).To(Succeed())
}

// A root waiting for the window starts when the charge that filled it leaves
// the window, with nothing else happening in the namespace.
func TestQuotaMetersRootStartsWhenAChargeLeavesTheWindow(t *testing.T) {
	e := setup(t)
	e.waitAgentReady("agent")
	e.createQuota("team", v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{{Name: tokens, Limit: 100, Window: metav1.Duration{Duration: time.Minute}}}})
	// A root of 50 s ago, since deleted, spent the whole window.
	filledAt := metav1.NewTime(time.Now().Add(-50 * time.Second).Truncate(time.Second))
	e.g.Eventually(func() error {
		var q v1alpha1.DelegationQuota
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "team"}, &q); err != nil {
			return err
		}
		q.Status.Used.Meters = []v1alpha1.MeterUse{{Name: tokens, Used: 100,
			Charges: []v1alpha1.MeterCharge{{UID: "0d6f1d1e-old", Root: "old", At: filledAt, Amount: 100, Settled: true}}}}
		return k8sClient.Status().Update(context.Background(), &q)
	}, eventually, tick).Should(Succeed())

	e.create(e.task("next", "echo", withBudget(v1alpha1.Meters{tokens: 10})))
	d := e.waitReason("next", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team": tokens 100/100 in 1m, budget 10; waiting in creation order`))
	e.waitPhase("next", v1alpha1.PhaseSucceeded)
	e.g.Expect(time.Now()).To(BeTemporally(">=", filledAt.Add(time.Minute)), "not before the charge left the window")
	e.g.Eventually(func() []v1alpha1.MeterCharge { return e.meterLedger("team", tokens).Charges }, eventually, tick).Should(
		ConsistOf(And(HaveField("Root", "next"), HaveField("Amount", int64(10)), HaveField("Settled", true))),
		"the old charge left the ledger; the echo root reported no spend and keeps its budget")
	e.g.Expect(e.meterUsed("team", tokens)()).To(Equal(int64(10)))
}
