/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/internal/a2a"
)

// A memory limit for what agents send: every call in flight may hold an
// answer of up to the response bound, so the number of calls in flight
// across all Agents is what bounds the answer bytes held at once. A call
// beyond it waits, the way a call waits for room in a full pool, and shows
// it the same way (reason AgentBusy, tether_agent_calls_waiting_for_memory).
// An eighth of the budget is kept for the calls that must not wait behind
// another tenant's bulk: renewals (a late one lets a lease lapse), cancels
// and card reads. Other calls hold at most the rest, so one Agent answering
// every read with a full-size body cannot hold every place.

// DefaultAnswerBytes is the default budget for answers held at once: a
// quarter of the chart's 256 MiB memory limit, so agents answering at the
// response bound with every call cannot take the operator past it.
const DefaultAnswerBytes int64 = 64 << 20

var callsWaitingForMemory = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "tether_agent_calls_waiting_for_memory",
	Help: "A2A calls that have room in their Agent's pool and wait for the operator-wide bound on answers held at once.",
})

func init() { metrics.Registry.MustRegister(callsWaitingForMemory) }

// SetMemoryLimit bounds the answer bytes held at once to answerBytes,
// each answer being at most responseBytes (0: a2a's default): at most
// answerBytes/responseBytes calls run at once, at least one. Call it
// before the first call is submitted.
func (d *Dispatcher) SetMemoryLimit(answerBytes, responseBytes int64) {
	if responseBytes <= 0 {
		responseBytes = a2a.DefaultMaxResponseBytes
	}
	if answerBytes <= 0 {
		d.inFlight = nil
		return
	}
	n := max(answerBytes/responseBytes, 1)
	d.inFlight = make(chan struct{}, n)
	d.ordinary = make(chan struct{}, n-n/8)
}

// reserved: a call that may take the places kept for renewals, cancels and
// card reads.
func (c Call) reserved() bool { return c.Kind == KindCancel || c.Kind == KindCard || c.leased }

// InFlightLimit is how many calls may run at once across all Agents (0:
// no bound).
func (d *Dispatcher) InFlightLimit() int { return cap(d.inFlight) }

// acquire waits for room under the memory limit: a place among the
// ordinary calls first (unless c may use the reserved places), then one
// among all.
func (d *Dispatcher) acquire(c Call) {
	if d.inFlight == nil {
		return
	}
	if !c.reserved() {
		take(d.ordinary)
	}
	take(d.inFlight)
}

func take(places chan struct{}) {
	select {
	case places <- struct{}{}:
		return
	default:
	}
	callsWaitingForMemory.Inc()
	places <- struct{}{}
	callsWaitingForMemory.Dec()
}

func (d *Dispatcher) release(c Call) {
	if d.inFlight == nil {
		return
	}
	<-d.inFlight
	if !c.reserved() {
		<-d.ordinary
	}
}
