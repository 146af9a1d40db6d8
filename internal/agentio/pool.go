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
	agent   types.NamespacedName
	size    int
	running int
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
				p.freed(q)
				p.queued(q, prio)
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

// spawn starts workers for what a pool can run now; it is called with d.mu
// held (a read ended, so waiting reads may fit under the read limit).
func (d *Dispatcher) spawn(p *pool) {
	if p.running < p.size && !p.empty() {
		p.running++
		go d.work(p)
	}
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

// Stats reports every pool's load, ordered by Agent.
func (d *Dispatcher) Stats() []PoolStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]PoolStats, 0, len(d.pools))
	for _, p := range d.pools {
		s := PoolStats{Agent: p.agent.String(), Running: p.running, Namespaces: p.loads()}
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
