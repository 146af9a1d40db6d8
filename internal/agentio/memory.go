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
// answer of up to the response bound, and every open stream up to the
// stream bound, so the number of calls in flight and of streams open across
// all Agents is what bounds the bytes agents have sent and the operator
// holds at once. Three quarters of --max-answer-bytes are for calls, a
// quarter for streams (streamHeldBytes each). A call beyond its share waits,
// the way a call waits for room in a full pool, and shows it the same way
// (reason AgentBusy, tether_agent_calls_waiting_for_memory); a task beyond
// the streams' share is polled.
// An eighth of the call places is kept for the calls that must not wait
// behind another tenant's bulk: renewals (a late one lets a lease lapse)
// and cancels. Other calls hold at most the rest, so one Agent answering
// every read with a full-size body cannot hold every place; card reads,
// which may wait on servers that never answer, hold at most a quarter of
// the call places (cards.go).

// DefaultAnswerBytes is the default budget for answers held at once: a
// quarter of the chart's 256 MiB memory limit, so agents answering at the
// response bound with every call and dripping on every stream cannot take
// the operator past it.
const DefaultAnswerBytes int64 = 64 << 20

// streamHeldBytes is what one open stream may hold: its reader's buffer,
// the event being read and its copy, and the decoded event, each at most
// the bound on one event of a stream (a2a.DefaultMaxStreamBytes).
const streamHeldBytes = 4 * a2a.DefaultMaxStreamBytes

// memoryPlaces splits answerBytes into call places of responseBytes each
// and stream places of streamHeldBytes each, at least one of each.
func memoryPlaces(answerBytes, responseBytes int64) (calls, streams int) {
	forStreams := answerBytes / 4
	return int(max((answerBytes-forStreams)/responseBytes, 1)), int(max(forStreams/streamHeldBytes, 1))
}

var callsWaitingForMemory = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "tether_agent_calls_waiting_for_memory",
	Help: "A2A calls that have room in their Agent's pool and wait for the operator-wide bound on answers held at once.",
})

func init() { metrics.Registry.MustRegister(callsWaitingForMemory) }

// SetMemoryLimit bounds the bytes agents' answers and streams hold at once
// to answerBytes, each answer being at most responseBytes (0: a2a's
// default): see memoryPlaces. Call it before the first call is submitted.
func (d *Dispatcher) SetMemoryLimit(answerBytes, responseBytes int64) {
	if responseBytes <= 0 {
		responseBytes = a2a.DefaultMaxResponseBytes
	}
	if answerBytes <= 0 {
		d.inFlight, d.ordinary, d.cardPlaces, d.streamPlaces = nil, nil, nil, nil
		return
	}
	n, streams := memoryPlaces(answerBytes, responseBytes)
	d.inFlight = make(chan struct{}, n)
	d.ordinary = make(chan struct{}, n-n/8)
	d.cardPlaces = make(chan struct{}, max(n/4, 1))
	d.streamPlaces = make(chan struct{}, streams)
}

// reserved: a call that may take the places kept for renewals and cancels.
func (c Call) reserved() bool { return c.Kind == KindCancel || c.leased }

// StreamLimit is how many streams may be open at once across all Agents
// (0: no bound).
func (d *Dispatcher) StreamLimit() int { return cap(d.streamPlaces) }

// takeStreamPlace takes a place for a stream if one is free; the task is
// polled otherwise.
func (d *Dispatcher) takeStreamPlace() bool {
	if d.streamPlaces == nil {
		return true
	}
	select {
	case d.streamPlaces <- struct{}{}:
		return true
	default:
		return false
	}
}

func (d *Dispatcher) releaseStreamPlace() {
	if d.streamPlaces != nil {
		<-d.streamPlaces
	}
}

// InFlightLimit is how many calls may run at once across all Agents (0:
// no bound).
func (d *Dispatcher) InFlightLimit() int { return cap(d.inFlight) }

// acquire waits for room under the memory limit: a card read's place
// first, then a place among the ordinary calls (unless c may use the
// reserved places), then one among all.
func (d *Dispatcher) acquire(c Call) {
	if d.inFlight == nil {
		return
	}
	if c.Kind == KindCard {
		take(d.cardPlaces)
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
	if c.Kind == KindCard {
		<-d.cardPlaces
	}
}
