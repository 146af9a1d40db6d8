/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// The per-Agent pools: a bounded set of workers per Agent, taking calls in
// priority order (cancels and card reads, then renewals and reads, then new
// work), so a slow agent fills only its own pool.

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// PoolStats is one Agent pool's load.
type PoolStats struct {
	Agent        string
	Running      int
	Queued       int
	OldestQueued time.Time
	// Namespaces is the load by the calling Delegations' namespaces
	// (fairshare.go).
	Namespaces []NamespaceLoad
}

type pool struct {
	agent types.NamespacedName
	size  int
	// running counts the pool's workers, the idle ones among them: a
	// worker with nothing to run waits workerIdle for the next call before
	// it ends. idle holds the waiting workers' wake channels.
	running int
	idle    []chan struct{}
	queues  [priorities][]*pending
	// waiting counts each queue's calls by namespace, busy the places each
	// namespace holds (fairshare.go).
	waiting [priorities]map[string]int
	busy    map[string]int
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
	d.spawn(p)
}

// workerIdle is how long a worker with nothing to run waits for the next
// call before it ends. Renewals come one by one, a few milliseconds apart:
// without the wait each ran on a new goroutine, whose stack grew again
// through the HTTP path (runtime.newstack and copystack, 7% of the
// operator's CPU in a lease hold).
const workerIdle = time.Second

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

// work runs calls of one pool until it has had nothing to run (nothing
// queued, or only reads over the read limit) for workerIdle.
func (d *Dispatcher) work(p *pool) {
	w := &idleWorker{wake: make(chan struct{}, 1)}
	defer w.stop()
	for waited := false; ; {
		d.mu.Lock()
		q := p.next()
		if q == nil && !waited && p.running <= p.size {
			waited = !d.await(p, w)
			continue
		}
		waited = false
		if q == nil || p.running > p.size {
			p.running--
			if q != nil { // the pool shrank: leave the call to another worker
				prio := q.call.priority()
				p.queues[prio] = append([]*pending{q}, p.queues[prio]...)
				p.freed(q)
				p.queued(q, prio)
				d.spawn(p) // an idle worker takes it
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
			p.freed(q)
			d.mu.Unlock()
			d.release(q.call)
			continue
		}
		if err := d.refusal(q.call); err != nil { // decided as it would leave (fence.go)
			p.freed(q)
			d.mu.Unlock()
			d.release(q.call)
			d.refuse(q, err)
			continue
		}
		q.running = true
		if q.call.Kind == KindGet {
			p.reads++
		}
		d.onTheirWay.Add(1)
		d.mu.Unlock()
		d.run(q, p)
		d.release(q.call)
		d.onTheirWay.Done()
	}
}

// spawn wakes an idle worker, or starts one, when the pool has calls
// waiting; it is called with d.mu held (a call was queued, or a read
// ended, so waiting reads may fit under the read limit). The worker that
// waited last is woken: its stack is the one most likely still warm.
func (d *Dispatcher) spawn(p *pool) {
	switch {
	case p.empty():
	case len(p.idle) > 0:
		last := len(p.idle) - 1
		p.idle[last] <- struct{}{} // never blocks: one wake per wait
		p.idle[last] = nil
		p.idle = p.idle[:last]
	case p.running < p.size:
		p.running++
		go d.work(p)
	}
}

// idleWorker is what a worker waits with.
type idleWorker struct {
	wake  chan struct{}
	timer *time.Timer
}

func (w *idleWorker) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// await is called with d.mu held and returns with it released: it waits
// for spawn to wake the worker (true) or for workerIdle to pass (false).
func (d *Dispatcher) await(p *pool, w *idleWorker) bool {
	p.idle = append(p.idle, w.wake)
	d.mu.Unlock()
	if w.timer == nil {
		w.timer = time.NewTimer(workerIdle)
	} else {
		w.timer.Reset(workerIdle)
	}
	select {
	case <-w.wake:
		return true
	case <-w.timer.C:
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(p.idle, w.wake); i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
		return false
	}
	<-w.wake // spawn woke it as the wait ended: the wake is already sent
	return true
}

// next takes the call to run from the first queue that has one that may
// run, and gives it a place.
func (p *pool) next() *pending {
	readsFull := p.reads >= p.readAllowance()
	// Reads wait for the read limit; other work of a queue (a look-up, a
	// send) behind them still runs.
	may := func(q *pending) bool { return !readsFull || q.call.Kind != KindGet }
	for i := range p.queues {
		j := p.pick(i, may)
		if j < 0 {
			continue
		}
		q := p.queues[i][j]
		if j == 0 {
			p.queues[i] = p.queues[i][1:]
		} else {
			p.queues[i] = slices.Delete(p.queues[i], j, j+1)
		}
		p.dequeued(q, i)
		p.taken(q)
		return q
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

// Stats reports every pool's load, ordered by Agent. A pool whose workers
// are all idle, waiting to end, carries no load and is left out.
func (d *Dispatcher) Stats() []PoolStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PoolStats, 0, len(d.pools))
	for _, p := range d.pools {
		if p.running == len(p.idle) && p.empty() {
			continue
		}
		s := PoolStats{Agent: p.agent.String(), Running: p.running - len(p.idle), Namespaces: p.loads()}
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
