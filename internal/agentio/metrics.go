/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/tracing"
)

// Metrics on controller-runtime's registry (served at the metrics endpoint).
// docs/operations.md lists them.
const agentLabel = "agent"

var (
	a2aRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tether_a2a_request_duration_seconds", Help: "A2A requests to agents, by method, agent and outcome (ok, refused, transport).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"method", agentLabel, "outcome"})
	leaseRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_lease_renewals_total", Help: "Lease renewals (GetTask with the lease extension), by result (ok, failed).",
	}, []string{"result"})
	callsInFlight = prometheus.NewDesc("tether_agent_calls_in_flight",
		"A2A calls running now in the Agent's pool.", []string{agentLabel}, nil)
	callsQueued = prometheus.NewDesc("tether_agent_calls_queued",
		"A2A calls waiting for room in the Agent's pool.", []string{agentLabel}, nil)
	callsOldestWait = prometheus.NewDesc("tether_agent_calls_oldest_wait_seconds",
		"How long the oldest call queued for the Agent's pool has waited (0 when none waits).", []string{agentLabel}, nil)
	namespaceCallsInFlight = prometheus.NewDesc("tether_agent_namespace_calls_in_flight",
		"Places of the Agent's pool held by calls of Delegations of the namespace (an Agent shared by AgentGrants splits them fairly).",
		[]string{agentLabel, "namespace"}, nil)
	namespaceCallsQueued = prometheus.NewDesc("tether_agent_namespace_calls_queued",
		"Calls of Delegations of the namespace waiting for room in the Agent's pool.", []string{agentLabel, "namespace"}, nil)
	scheduledTasks = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tether_scheduled_tasks", Help: "Running tasks the renewal and poll scheduler follows.",
	})
	resumedTasks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tether_scheduler_resumed_tasks_total",
		Help: "Running tasks a new leader followed from its cache before reconciling anything (read at once on taking over).",
	})
	// A renewal that leaves late eats into the lease: this is the margin
	// the alerts and the dashboard watch, before any lease lapses.
	scheduledReadLateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tether_scheduled_read_lateness_seconds",
		Help:    "How long after it was due a scheduled read left for the agent, by agent and read (renewal for a leased task, else poll).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{agentLabel, "read"})
)

func init() {
	metrics.Registry.MustRegister(a2aRequestDuration, leaseRenewals, scheduledTasks, resumedTasks, scheduledReadLateness)
}

// observeLateness records how late a scheduled read starts.
func observeLateness(c Call, started time.Time) {
	if c.due.IsZero() {
		return
	}
	read := "poll"
	if c.leased {
		read = "renewal"
	}
	scheduledReadLateness.WithLabelValues(c.Agent.String(), read).Observe(max(0, started.Sub(c.due).Seconds()))
}

// ForgetAgentSeries removes the series of an Agent that is gone: Agent names
// are chosen by tenants, and series of Agents that no longer exist would
// otherwise add up without bound. (The pool gauges are read at scrape time
// from the pools that exist.)
func ForgetAgentSeries(namespace, name string) {
	a2aRequestDuration.DeletePartialMatch(prometheus.Labels{agentLabel: agentLabelValue(namespace, name)})
}

func agentLabelValue(namespace, name string) string { return namespace + "/" + name }

// poolCollector reports every pool's load at scrape time.
type poolCollector struct{ d *Dispatcher }

func (p poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- callsInFlight
	ch <- callsQueued
	ch <- callsOldestWait
	ch <- namespaceCallsInFlight
	ch <- namespaceCallsQueued
}

func (p poolCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range p.d.Stats() {
		wait := 0.0
		if !s.OldestQueued.IsZero() {
			wait = now.Sub(s.OldestQueued).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(callsInFlight, prometheus.GaugeValue, float64(s.Running), s.Agent)
		ch <- prometheus.MustNewConstMetric(callsQueued, prometheus.GaugeValue, float64(s.Queued), s.Agent)
		ch <- prometheus.MustNewConstMetric(callsOldestWait, prometheus.GaugeValue, wait, s.Agent)
		for _, n := range s.Namespaces {
			ch <- prometheus.MustNewConstMetric(namespaceCallsInFlight, prometheus.GaugeValue, float64(n.Running), s.Agent, n.Namespace)
			ch <- prometheus.MustNewConstMetric(namespaceCallsQueued, prometheus.GaugeValue, float64(n.Queued), s.Agent, n.Namespace)
		}
	}
}

// instrumented measures every call to an agent.
type instrumented struct {
	a2a.Client
	agent string
}

// observe records a call's duration; a sampled span's trace id becomes the
// observation's exemplar, linking a slow call in a dashboard to its trace.
func (c instrumented) observe(ctx context.Context, method string, start time.Time, err error) {
	h := a2aRequestDuration.WithLabelValues(method, c.agent, metricOutcome(err))
	d := time.Since(start).Seconds()
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if e, ok := h.(prometheus.ExemplarObserver); ok {
			e.ObserveWithExemplar(d, prometheus.Labels{"trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String()})
			return
		}
	}
	h.Observe(d)
}

// endCallSpan ends a call's span with the task id its answer named.
func endCallSpan(span trace.Span, res Answer) {
	if span == nil {
		return
	}
	id := res.TaskID
	if res.Task != nil {
		id = res.Task.ID
	}
	tracing.EndCall(span, id, metricOutcome(res.Err), res.Err)
}

// op names a call for its span: a read that renews a lease is a renewal.
func (c Call) op() string {
	switch {
	case c.Kind == KindGet && c.leased:
		return "renewal"
	case c.Kind == KindGet:
		return "read"
	case c.lookUp:
		return "look-up"
	case c.Kind == KindStart && c.sends:
		return "send"
	case c.Kind == KindStart:
		return "adopt"
	}
	return string(c.Kind)
}

func (c instrumented) Send(ctx context.Context, req a2a.SendRequest) (*a2a.Task, error) {
	start := time.Now()
	t, err := c.Client.Send(ctx, req)
	c.observe(ctx, "SendMessage", start, err)
	return t, err
}

func (c instrumented) Get(ctx context.Context, taskID string, renewLease bool) (*a2a.Task, error) {
	start := time.Now()
	t, err := c.Client.Get(ctx, taskID, renewLease)
	c.observe(ctx, "GetTask", start, err)
	if renewLease {
		result := "ok"
		if err != nil {
			result = "failed"
		}
		leaseRenewals.WithLabelValues(result).Inc()
	}
	return t, err
}

func (c instrumented) Cancel(ctx context.Context, taskID string) (*a2a.Task, error) {
	start := time.Now()
	t, err := c.Client.Cancel(ctx, taskID)
	c.observe(ctx, "CancelTask", start, err)
	return t, err
}

func (c instrumented) ListByContext(ctx context.Context, contextID string) ([]*a2a.Task, error) {
	start := time.Now()
	t, err := c.Client.ListByContext(ctx, contextID)
	c.observe(ctx, "ListTasks", start, err)
	return t, err
}
