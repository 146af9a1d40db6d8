/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
)

const (
	meterLabel     = "meter"
	namespaceLabel = "namespace"
)

// Metrics on controller-runtime's registry (served at the metrics endpoint).
// docs/operations.md lists them with a sample alert.
var (
	budgetReserved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_budget_reserved_total", Help: "Budget reserved from parents for children, by meter.",
	}, []string{meterLabel})
	budgetCharged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_budget_charged_total", Help: "Budget charged to parents when children settled, by meter.",
	}, []string{meterLabel})
	budgetRefunded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_budget_refunded_total", Help: "Reserved budget given back to parents when children settled, by meter.",
	}, []string{meterLabel})
	cascadeCancels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_cascade_cancels_total", Help: "Tasks cancelled because of their parent, by reason.",
	}, []string{"reason"})
	sendAdoptions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tether_send_adoptions_total", Help: "Tasks found at the agent after a send whose answer was lost, adopted instead of sent again.",
	})
	retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_retries_total", Help: "Attempts scheduled again under spec.retry, by the failure class of the attempt that ended.",
	}, []string{"class"})
	pushForwarded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tether_push_forwarded_total",
		Help: "Push notifications a standby checked and handed to its shard's leader, which follows the task.",
	})
	phaseMetrics = &phaseCollector{desc: prometheus.NewDesc("tether_delegations",
		"Delegations by namespace, phase and (for Pending) the reason they wait, as the operator's cache holds them.",
		[]string{namespaceLabel, "phase", "reason"}, nil),
		rootBudget: map[string]*prometheus.Desc{
			"granted": prometheus.NewDesc("tether_root_budget_granted",
				"Budget granted to the tree, per meter, of each unsettled root Delegation (no parentRef) with a budget.", rootLabels, nil),
			"reserved": prometheus.NewDesc("tether_root_budget_reserved",
				"Budget held by the root's active children, per meter, of each unsettled root Delegation with a budget.", rootLabels, nil),
			"spent": prometheus.NewDesc("tether_root_budget_spent",
				"Budget the tree spent so far (its root's own report plus what settled children were charged), per meter, "+
					"of each unsettled root Delegation with a budget.", rootLabels, nil),
		}}
)

var rootLabels = []string{namespaceLabel, "root", meterLabel}

func init() {
	metrics.Registry.MustRegister(budgetReserved, budgetCharged,
		budgetRefunded, cascadeCancels, sendAdoptions, retries, pushForwarded, phaseMetrics)
}

// phaseCollector counts Delegations by phase from the cache at scrape time,
// so the numbers are right after a restart without any bookkeeping. It also
// reports the ledger of every unsettled root: one series per running tree
// and meter, gone when the tree settles, so budget burn can be watched per
// tree without a label per Delegation.
type phaseCollector struct {
	desc       *prometheus.Desc
	rootBudget map[string]*prometheus.Desc
	mu         sync.Mutex
	reader     client.Reader
}

func (p *phaseCollector) use(r client.Reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reader = r
}

func (p *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.desc
	for _, d := range p.rootBudget {
		ch <- d
	}
}

func (p *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	r := p.reader
	p.mu.Unlock()
	if r == nil {
		return
	}
	var list v1alpha1.DelegationList
	// Read-only: the cache's own objects, no copy of each on every scrape.
	if err := r.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	type key struct{ ns, phase, reason string }
	counts := map[key]int{}
	for _, d := range list.Items {
		k := key{ns: d.Namespace, phase: string(d.Status.Phase)}
		if k.phase == "" {
			k.phase = string(v1alpha1.PhasePending)
		}
		// Only Pending reasons: few values, and the ones an alert needs
		// (waiting for budget, a parent, an Agent).
		if k.phase == string(v1alpha1.PhasePending) && d.Status.Outcome != nil {
			k.reason = d.Status.Outcome.Reason
		}
		counts[k]++
		p.collectRootBudget(ch, &d)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), k.ns, k.phase, k.reason)
	}
}

func addMeters(c *prometheus.CounterVec, m v1alpha1.Meters) {
	for meter, n := range m {
		if n > 0 {
			c.WithLabelValues(meterLabels.of(meter)).Add(float64(n))
		}
	}
}

func (p *phaseCollector) collectRootBudget(ch chan<- prometheus.Metric, d *v1alpha1.Delegation) {
	b := d.Status.Budget
	if d.Spec.ParentRef != nil || b == nil || len(b.Granted) == 0 || d.Status.Phase.Settled() {
		return
	}
	for field, m := range map[string]v1alpha1.Meters{"granted": b.Granted, "reserved": b.Reserved, "spent": b.Spent} {
		for meter := range b.Granted {
			ch <- prometheus.MustNewConstMetric(p.rootBudget[field], prometheus.GaugeValue, float64(m[meter]), d.Namespace, d.Name, meter)
		}
	}
}

// Meter names are chosen by tenants: as label values they would add series
// without bound (a series is never removed from a counter). The first
// maxMeterLabels names seen get their own label value; the rest are
// counted under otherMeter.
const (
	maxMeterLabels = 32
	otherMeter     = "other"
)

var meterLabels = &boundedLabels{limit: maxMeterLabels, other: otherMeter}

// boundedLabels hands out at most limit distinct label values.
type boundedLabels struct {
	limit int
	other string
	mu    sync.Mutex
	seen  map[string]struct{}
}

func (b *boundedLabels) of(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.limit || v == b.other {
		return b.other
	}
	if b.seen == nil {
		b.seen = map[string]struct{}{}
	}
	b.seen[v] = struct{}{}
	return v
}
