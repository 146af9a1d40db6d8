/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
	"github.com/tether-dev/tether/internal/tracing"
)

// Kind is what a call does. A Delegation has at most one call of each kind
// queued or running.
type Kind string

const (
	// KindStart starts following a task: it sends the first message, looks
	// an earlier send up, or adopts spec.taskID, one of them at a time.
	KindStart Kind = "start"
	// KindGet reads the task back; with a lease it renews it.
	KindGet Kind = "get"
	// KindCancel sends CancelTask.
	KindCancel Kind = "cancel"
	// KindReply sends a reply to a task that asked for input.
	KindReply Kind = "reply"
)

// priority orders the calls waiting for room in one Agent's pool: cancels
// and card reads first (they stop work and free the agent; nothing is sent
// to an Agent whose card is not read), then reads and renewals (a late
// renewal lets a lease lapse and loses work already done), then new work
// (sends, replies, look-ups), which only waits.
func (k Kind) priority() int {
	switch k {
	case KindCancel, KindCard:
		return 0
	case KindGet:
		return 1
	}
	return 2
}

const priorities = 3

// Defaults for the pools.
const (
	DefaultCallsPerAgent  = 8
	DefaultMaxCallTimeout = 30 * time.Second
)

// Key names one call: a Delegation and the kind of call.
type Key struct {
	Delegation types.NamespacedName
	Kind       Kind
}

// Call is one operation on an agent, made on that Agent's pool. Only the
// operations of ops.go build one.
type Call struct {
	Key
	// Agent names the pool (the Agent's namespace and name).
	Agent types.NamespacedName
	// PoolSize is the Agent's spec.maxConcurrentCalls; 0 means the default.
	PoolSize int
	// Timeout is the Agent's spec.requestTimeout; 0 means the operator's maximum.
	Timeout time.Duration
	// Within, when set, ends the call no later than this long after it
	// left: a scheduled read gets its interval from when it is sent, not
	// from when it was due, so a read that waited for room is not cut
	// before the agent could answer it (and then asked again).
	Within time.Duration
	// Lapses, for a renewal, is when the task's lease lapses unless this
	// read is answered: renewals waiting for room go in that order.
	Lapses time.Time
	// Urgent: the result wakes its Delegation through UrgentEvents, which
	// the controller puts ahead of other work (a send's answer: until it is
	// applied, the task is not followed and its lease is not renewed).
	Urgent bool
	// do makes the call (see ops.go: every operation builds its own).
	do func(ctx context.Context) Answer
	// done, when set, receives the answer instead of the answer store.
	done func(Answer)
	// poll: a read of the scheduler for a task without a lease (it waits
	// behind renewals when reads are limited, see readlimit.go).
	poll bool
	// sends: the call sends a Delegation's first message (its leaving is
	// recorded); lookUp: it looks such a send's task up.
	sends, lookUp bool
	// Trace is the calling Delegation's span context (tracing.Of); the
	// call's span is its child. TaskID names the task, when known.
	Trace  trace.SpanContext
	TaskID string
	// due and leased: a scheduled read, when it was due and whether it
	// renews a lease (for tether_scheduled_read_lateness_seconds).
	due    time.Time
	leased bool
}

// CallState is what the Dispatcher knows of a call that has not finished.
type CallState struct {
	// Pending: the call is queued or running.
	Pending bool
	// Running: it holds a slot in the pool.
	Running bool
	// Queued is when it was submitted.
	Queued time.Time
}

// PoolStats is one Agent pool's load.
type PoolStats struct {
	Agent        string
	Running      int
	Queued       int
	OldestQueued time.Time
}

// Dispatcher runs calls on bounded per-Agent pools, keeps their results
// until the reconciler takes them, and wakes the Delegation through Events.
type Dispatcher struct {
	// MaxCallsPerAgent caps every pool, whatever the Agent asks for.
	MaxCallsPerAgent int
	// MaxCallTimeout caps every call's deadline.
	MaxCallTimeout time.Duration
	// Connector builds the clients calls are made with.
	Connector *Connector

	once   sync.Once
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
	// take the places kept for renewals, cancels and card reads.
	inFlight, ordinary chan struct{}
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
}

type pool struct {
	agent   types.NamespacedName
	size    int
	running int
	queues  [priorities][]*pending
	// reads runs now; readLimit is how many may (readlimit.go).
	reads     int
	readLimit float64
	// fastest is the quickest answered read; backedOff is when the read
	// limit last backed off.
	fastest   time.Duration
	backedOff time.Time
}

type pending struct {
	call    Call
	queued  time.Time
	running bool
}

// NewDispatcher builds a Dispatcher and registers its pool metrics.
func NewDispatcher(maxCallsPerAgent int, maxCallTimeout time.Duration) *Dispatcher {
	d := &Dispatcher{MaxCallsPerAgent: maxCallsPerAgent, MaxCallTimeout: maxCallTimeout}
	d.init()
	_ = metrics.Registry.Register(poolCollector{d: d}) // one per process; tests build several
	return d
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.events = make(chan event.GenericEvent, 4096)
		d.urgent = make(chan event.GenericEvent, 4096)
		d.agentEvents = make(chan event.GenericEvent, 1024)
		d.pools = map[types.NamespacedName]*pool{}
		d.calls = map[Key]*pending{}
		d.results = map[Key]Answer{}
		d.after = map[Key]Call{}
		d.sends = map[types.NamespacedName]SendRecord{}
		d.readLimits = map[types.NamespacedName]float64{}
		d.cards = map[string]*namespaceCards{}
		if d.MaxCallTimeout <= 0 {
			d.MaxCallTimeout = DefaultMaxCallTimeout
		}
	})
}

// Events carries one event per finished call (for source.Channel).
func (d *Dispatcher) Events() <-chan event.GenericEvent {
	d.init()
	return d.events
}

// UrgentEvents carries one event per finished Urgent call.
func (d *Dispatcher) UrgentEvents() <-chan event.GenericEvent {
	d.init()
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
	d.init()
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

// toPool adds the call to its Agent's pool; it is called with d.mu held.
func (d *Dispatcher) toPool(c Call, queued time.Time) {
	p := d.pools[c.Agent]
	if p == nil {
		p = &pool{agent: c.Agent, readLimit: d.readLimits[c.Agent]}
		d.pools[c.Agent] = p
	}
	p.size = d.poolSize(c.PoolSize)
	q := &pending{call: c, queued: queued}
	d.calls[c.Key] = q
	p.enqueue(q)
	if p.running < p.size {
		p.running++
		go d.work(p)
	}
}

func (d *Dispatcher) poolSize(asked int) int {
	n := asked
	if n <= 0 {
		n = DefaultCallsPerAgent
	}
	if d.MaxCallsPerAgent > 0 && n > d.MaxCallsPerAgent {
		n = d.MaxCallsPerAgent
	}
	return n
}

// work runs calls of one pool until its queues are empty.
func (d *Dispatcher) work(p *pool) {
	for {
		d.mu.Lock()
		q := p.next()
		if q == nil || p.running > p.size {
			p.running--
			if q != nil { // the pool shrank: leave the call to another worker
				prio := q.call.priority()
				p.queues[prio] = append([]*pending{q}, p.queues[prio]...)
			}
			if p.running == 0 && p.empty() {
				delete(d.pools, p.agent)
				if p.readLimit > 0 && int(p.readLimit) < p.size {
					d.readLimits[p.agent] = p.readLimit // an idle pool keeps what it learnt
				} else {
					delete(d.readLimits, p.agent)
				}
			}
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		d.acquire(q.call)
		d.mu.Lock()
		if d.calls[q.call.Key] != q { // dropped while it waited for memory
			d.mu.Unlock()
			d.release(q.call)
			continue
		}
		q.running = true
		if q.call.Kind == KindGet {
			p.reads++
		}
		d.mu.Unlock()
		d.run(q, p)
		d.release(q.call)
	}
}

// spawn starts workers for what a pool can run now; it is called with d.mu
// held (a read ended, so waiting reads may fit under the read limit).
func (d *Dispatcher) spawn(p *pool) {
	if p.running < p.size && !p.empty() {
		p.running++
		go d.work(p)
	}
}

// CallTimeout is how long one call to an agent may take: what the Agent
// asks (spec.requestTimeout; 0 when unset), capped by the operator-wide
// maximum (--max-call-timeout; 0 means DefaultMaxCallTimeout).
func CallTimeout(asked, maximum time.Duration) time.Duration {
	if maximum <= 0 {
		maximum = DefaultMaxCallTimeout
	}
	if asked > 0 && asked < maximum {
		return asked
	}
	return maximum
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
		d.sendLeft(c.Delegation, started, deadline)
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
	if c.Kind == KindGet {
		p.reads--
		p.readAnswered(res, started, res.Finished.Sub(started), allowed)
		d.spawn(p)
	}
	if c.lookUp && res.LookUp != nil {
		res.LookUp.AfterSendDeadline = d.lookedUp(c.Delegation, started, res.LookUp.Err != nil)
	}
	d.calls = shrinkmap.Delete(d.calls, c.Key, &d.peaks.calls)
	if c.Kind == KindCard {
		d.cardDone(c.Agent.Namespace)
	}
	if c.done == nil {
		d.results[c.Key] = res
	}
	if next, ok := d.after[c.Key]; ok {
		d.after = shrinkmap.Delete(d.after, c.Key, &d.peaks.after)
		d.queue(next)
	}
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

func (p *pool) next() *pending {
	readsFull := p.reads >= p.readAllowance()
	for i := range p.queues {
		if readsFull && len(p.queues[i]) > 0 && p.queues[i][0].call.Kind == KindGet {
			// Reads wait for the read limit; other work of this queue
			// (a look-up, a send) behind them still runs.
			if j := slices.IndexFunc(p.queues[i], func(q *pending) bool { return q.call.Kind != KindGet }); j >= 0 {
				q := p.queues[i][j]
				p.queues[i] = slices.Delete(p.queues[i], j, j+1)
				return q
			}
			continue
		}
		if len(p.queues[i]) > 0 {
			q := p.queues[i][0]
			p.queues[i] = p.queues[i][1:]
			return q
		}
	}
	return nil
}

func (p *pool) empty() bool {
	for i := range p.queues {
		if len(p.queues[i]) > 0 {
			return false
		}
	}
	return true
}

// Take returns and forgets the answer of a finished call.
func (d *Dispatcher) Take(key Key) (Answer, bool) {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	d.results = shrinkmap.Delete(d.results, key, &d.peaks.results)
	return res, ok
}

// answerWaiting reports an answered call whose result the reconciler has
// not taken yet.
func (d *Dispatcher) answerWaiting(key Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	return ok && res.Err == nil
}

// Peek returns the result of a finished call without taking it.
func (d *Dispatcher) Peek(key Key) (Answer, bool) {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	return res, ok
}

// Restore puts back a result whose application could not be written; the
// caller's retry takes it again.
func (d *Dispatcher) Restore(key Key, res Answer) {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.results[key]; !ok {
		d.results[key] = res
	}
}

// Has reports a call that is queued, running or holds an untaken result.
func (d *Dispatcher) Has(key Key) bool {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	_, pending := d.calls[key]
	_, done := d.results[key]
	_, later := d.after[key]
	return pending || done || later
}

// State reports a call that is queued or running.
func (d *Dispatcher) State(key Key) CallState {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	q, ok := d.calls[key]
	if !ok {
		return CallState{}
	}
	return CallState{Pending: true, Running: q.running, Queued: q.queued}
}

// Drop removes a call that has not started yet (a send for a Delegation
// that is being cancelled). It reports whether the call was dropped.
func (d *Dispatcher) Drop(key Key) bool {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
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
				break
			}
		}
	}
	return true
}

// Forget drops every stored result of a Delegation that is gone.
func (d *Dispatcher) Forget(delegation types.NamespacedName) {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
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

// Stats reports every pool's load, ordered by Agent.
func (d *Dispatcher) Stats() []PoolStats {
	d.init()
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PoolStats, 0, len(d.pools))
	for _, p := range d.pools {
		s := PoolStats{Agent: p.agent.String(), Running: p.running}
		for i := range p.queues {
			s.Queued += len(p.queues[i])
			for _, q := range p.queues[i] {
				if s.OldestQueued.IsZero() || q.queued.Before(s.OldestQueued) {
					s.OldestQueued = q.queued
				}
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PoolStats) int { return cmp.Compare(a.Agent, b.Agent) })
	return out
}
