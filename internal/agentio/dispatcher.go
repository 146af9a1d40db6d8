/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// The Dispatcher takes calls from the reconciler and the scheduler, runs
// them on the Agent's pool (pool.go), keeps their answers until they are
// taken (answer.go) and wakes the Delegation through its event channels.

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
	"github.com/tether-dev/tether/internal/tracing"
)

// Dispatcher runs calls on bounded per-Agent pools, keeps their results
// until the reconciler takes them, and wakes the Delegation through Events.
type Dispatcher struct {
	// MaxCallsPerAgent caps every pool, whatever the Agent asks for.
	MaxCallsPerAgent int
	// MaxCallTimeout caps every call's deadline.
	MaxCallTimeout time.Duration
	// Connector builds the clients calls are made with.
	Connector *Connector

	events chan event.GenericEvent
	urgent chan event.GenericEvent
	// agentEvents wakes Agents whose card read finished.
	agentEvents chan event.GenericEvent
	mu          sync.Mutex
	pools       map[types.NamespacedName]*pool
	calls       map[Key]*pending
	results     map[Key]Answer
	// after holds a reconciler's call that came while the scheduler's call
	// of the same key ran; it is made as soon as that one ends.
	after map[Key]Call
	// inFlight bounds the calls running at once across all Agents (see
	// memory.go); nil: no bound. ordinary bounds the calls that may not
	// take the places kept for renewals and cancels, cardPlaces the card
	// reads, streamPlaces the streams open at once.
	inFlight, ordinary, cardPlaces, streamPlaces chan struct{}
	// readLimits keeps the read limit an idle pool had learnt, by Agent.
	readLimits map[types.NamespacedName]float64
	// sends records the sends whose task id is not known yet (sends.go).
	sends map[types.NamespacedName]SendRecord
	// agents holds one read-only copy of each Agent version for the calls
	// and followed tasks that need it.
	agents sync.Map // types.NamespacedName -> *v1alpha1.Agent
	// peaks are the maps' sizes for shrinkmap.Delete.
	peaks struct{ calls, results, after, sends int }
	// CardReadsPerNamespace caps the card reads running at once for the
	// Agents of one namespace (0: see cardShare); cards holds their count
	// and the reads waiting for room (cards.go).
	CardReadsPerNamespace int
	cards                 map[string]*namespaceCards
	// Fence, when set, is asked as each call that starts or ends work
	// leaves (fence.go); stopping: Start's context ended, nothing leaves.
	Fence    Fence
	stopping bool
	// DrainTimeout bounds the wait for calls on their way once stopping
	// (0: DefaultDrainTimeout).
	DrainTimeout time.Duration
	// leadingSince is when this process started to make calls: built, or
	// elected (Start). Every send of a process before it left earlier.
	leadingSince time.Time
	// cancelAfterSend holds, by Delegation, a cancel that came while the
	// Delegation's send was on its way: it is made once the send ended.
	cancelAfterSend map[types.NamespacedName]*pending
	// onTheirWay counts the calls that left and have not ended.
	onTheirWay sync.WaitGroup
}

// NewDispatcher builds a Dispatcher and registers its pool metrics.
func NewDispatcher(maxCallsPerAgent int, maxCallTimeout time.Duration) *Dispatcher {
	if maxCallTimeout <= 0 {
		maxCallTimeout = DefaultMaxCallTimeout
	}
	d := &Dispatcher{
		MaxCallsPerAgent: maxCallsPerAgent, MaxCallTimeout: maxCallTimeout,
		events:      make(chan event.GenericEvent, 4096),
		urgent:      make(chan event.GenericEvent, 4096),
		agentEvents: make(chan event.GenericEvent, 1024),
		pools:       map[types.NamespacedName]*pool{},
		calls:       map[Key]*pending{},
		results:     map[Key]Answer{},
		after:       map[Key]Call{},
		sends:       map[types.NamespacedName]SendRecord{},
		readLimits:  map[types.NamespacedName]float64{},
		cards:       map[string]*namespaceCards{},

		cancelAfterSend: map[types.NamespacedName]*pending{},
		leadingSince:    time.Now(),
	}
	_ = metrics.Registry.Register(poolCollector{d: d}) // one per process; tests build several
	return d
}

// Events carries one event per finished call (for source.Channel).
func (d *Dispatcher) Events() <-chan event.GenericEvent {
	return d.events
}

// UrgentEvents carries one event per finished Urgent call.
func (d *Dispatcher) UrgentEvents() <-chan event.GenericEvent {
	return d.urgent
}

// Submit queues the call unless one of the same key is queued, running or
// holds an untaken result. It never blocks on the network.
//
// A reconciler's call that finds the scheduler's call of the same key on its
// way is kept and made once that one ends: the scheduler hands its answer
// on only when it differs from what was applied, and the reconciler asked
// because something changed (a reply to send, a failed call to check).
func (d *Dispatcher) Submit(c Call) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q, ok := d.calls[c.Key]; ok {
		if q.call.done == nil || c.done != nil {
			return false
		}
		d.after[c.Key] = c
		return true
	}
	return d.queue(c)
}

// queue adds the call to its Agent's pool; it is called with d.mu held.
func (d *Dispatcher) queue(c Call) bool {
	if _, ok := d.results[c.Key]; ok && c.done == nil {
		return false
	}
	if c.Kind == KindCard && !d.cardRoom(c) {
		return true // it waits for its namespace's share (cards.go)
	}
	d.toPool(c, time.Now())
	return true
}

func (d *Dispatcher) run(q *pending, p *pool) {
	c := q.call
	started := time.Now()
	allowed := CallTimeout(c.Timeout, d.MaxCallTimeout)
	if c.Within > 0 && c.Within < allowed {
		allowed = c.Within
	}
	deadline := started.Add(allowed)
	observeLateness(c, started)
	if c.sends {
		d.mu.Lock()
		d.sendLeft(c.Delegation, deadline)
		d.mu.Unlock()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	ctx, span := tracing.StartCall(ctx, tracing.Call{Parent: c.Trace, Op: c.op(), Agent: c.Agent.String(),
		Delegation: c.Delegation.String(), TaskID: c.TaskID})
	res := c.do(ctx)
	endCallSpan(span, res)
	cancel()
	res.Class = a2a.Classify(res.Err)
	res.Queued, res.Finished = q.queued, time.Now()
	d.mu.Lock()
	p.freed(q)
	if c.Kind == KindGet {
		p.reads--
		p.readAnswered(res, started, res.Finished.Sub(started), allowed)
		d.spawn(p)
	}
	if c.lookUp && res.LookUp != nil {
		res.LookUp.AfterSendDeadline = d.lookedUp(c.Delegation, started, res.LookUp.Err != nil, d.proofAfter(c))
	}
	d.calls = shrinkmap.Delete(d.calls, c.Key, &d.peaks.calls)
	if c.Kind == KindCard {
		d.cardDone(c.Agent.Namespace)
	}
	if c.done == nil {
		d.results[c.Key] = res
	}
	d.ended(c)
	d.mu.Unlock()
	if c.done != nil {
		c.done(res)
		return
	}
	if c.Kind == KindCard {
		agent := metav1.ObjectMeta{Namespace: c.Delegation.Namespace, Name: c.Delegation.Name}
		d.agentEvents <- event.GenericEvent{Object: &v1alpha1.Agent{ObjectMeta: agent}}
		return
	}
	d.wake(c.Delegation, c.Urgent)
}

// wake enqueues the Delegation.
func (d *Dispatcher) wake(key types.NamespacedName, urgent bool) {
	ch := d.events
	if urgent {
		ch = d.urgent
	}
	ch <- event.GenericEvent{Object: &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

// deliver stores a result made outside the pools (the scheduler's reads)
// and wakes the Delegation.
func (d *Dispatcher) deliver(key Key, res Answer) {
	d.mu.Lock()
	d.results[key] = res
	d.mu.Unlock()
	d.wake(key.Delegation, false)
}

// Has reports a call that is queued, running or holds an untaken result.
func (d *Dispatcher) Has(key Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, pending := d.calls[key]
	_, done := d.results[key]
	_, later := d.after[key]
	_, afterSend := d.cancelAfterSend[key.Delegation]
	return pending || done || later || (key.Kind == KindCancel && afterSend)
}

// State reports a call that is queued or running.
func (d *Dispatcher) State(key Key) CallState {
	d.mu.Lock()
	defer d.mu.Unlock()
	q, ok := d.calls[key]
	if !ok && key.Kind == KindCancel {
		q, ok = d.cancelAfterSend[key.Delegation]
	}
	if !ok {
		return CallState{}
	}
	return CallState{Pending: true, Running: q.running, Queued: q.queued}
}

// Drop removes a call that has not started yet (a send for a Delegation
// that is being cancelled). It reports whether the call was dropped.
func (d *Dispatcher) Drop(key Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropLocked(key)
}

// dropLocked is Drop with d.mu held.
func (d *Dispatcher) dropLocked(key Key) bool {
	q, ok := d.calls[key]
	if !ok || q.running {
		return false
	}
	d.calls = shrinkmap.Delete(d.calls, key, &d.peaks.calls)
	if p := d.pools[q.call.Agent]; p != nil {
		prio := q.call.priority()
		for i, x := range p.queues[prio] {
			if x == q {
				p.queues[prio] = append(p.queues[prio][:i:i], p.queues[prio][i+1:]...)
				p.dequeued(q, prio)
				break
			}
		}
	}
	return true
}

// Forget drops every call of a Delegation that is gone that has not left
// yet (a force-deleted Delegation's queued send never leaves), and every
// stored result of it. A call on its way ends by its deadline; its answer
// is dropped with the next Forget or found by nobody.
func (d *Dispatcher) Forget(delegation types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.calls {
		if k.Delegation == delegation && k.Kind != KindCard {
			d.dropLocked(k)
		}
	}
	delete(d.cancelAfterSend, delegation)
	for k := range d.results {
		if k.Delegation == delegation && k.Kind != KindCard { // an Agent's card read may share the name
			d.results = shrinkmap.Delete(d.results, k, &d.peaks.results)
		}
	}
	for k := range d.after {
		if k.Delegation == delegation {
			d.after = shrinkmap.Delete(d.after, k, &d.peaks.after)
		}
	}
	d.sends = shrinkmap.Delete(d.sends, delegation, &d.peaks.sends)
}
