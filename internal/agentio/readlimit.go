/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Reads that adapt to the agent. Each Agent's pool lets only so many reads
// (renewals and polls) run at once: the limit halves when a read times out
// after the agent had it for a while (readTimedOut), shrinks by a quarter
// when an answer took more than half the time the read had (the agent is
// queueing: fewer reads at once keep its answers inside their deadlines),
// and grows back by one per limit's worth of answered reads (additive
// increase, multiplicative decrease, the shape TCP congestion control has).
// A read's time counts from when it left, not from when it was due, so a
// read that waited for room is never cut short for it. A slow agent is thus
// read less often instead of more: reads beyond the limit wait, renewals
// first, the one whose lease lapses soonest first, while plain polls wait
// behind them and stretch. A read that waits is never asked again on top of
// itself (one call of a kind per Delegation), and the next read of a task
// is due no sooner than one interval after a late answer.

// readPriority is where a read waits: renewals with the reads the
// reconciler asked for, plain polls with new work.
func (c Call) priority() int {
	if c.Kind == KindGet && c.poll {
		return 2
	}
	return c.Kind.priority()
}

// readAllowance is how many reads may run now at this pool.
func (p *pool) readAllowance() int {
	if p.readLimit < 1 {
		p.readLimit = float64(p.size)
	}
	return max(int(p.readLimit), 1)
}

// enqueue adds a call to its queue: renewals in the order their leases
// lapse (a read the reconciler asked for, with no lapse time, goes first),
// the rest in submission order.
func (p *pool) enqueue(q *pending) {
	prio := q.call.priority()
	p.queued(q, prio)
	if q.call.Kind != KindGet || q.call.poll {
		p.queues[prio] = append(p.queues[prio], q)
		return
	}
	at, _ := slices.BinarySearchFunc(p.queues[prio], q, func(a, b *pending) int {
		return dueOf(a).Compare(dueOf(b))
	})
	p.queues[prio] = slices.Insert(p.queues[prio], at, q)
}

// dueOf orders reads: a read without a lapse time (asked for now) sorts
// first.
func dueOf(q *pending) time.Time {
	if q.call.Kind != KindGet {
		return time.Time{}
	}
	return q.call.Lapses
}

// readAnswered adapts the pool's read limit to how a read that left at
// started was answered after took, out of the full time it was allowed; it
// is called with d.mu held. A slow answer is one that took more than half
// its time and more than twice the fastest answer seen, so an agent that is
// merely slow at every read is not mistaken for one that queues them. The
// limit backs off once per round: reads that left before the last back-off
// saw the load that caused it and count for no second one.
func (p *pool) readAnswered(res Answer, started time.Time, took, full time.Duration) {
	allowance := float64(p.readAllowance())
	answered := res.Class == a2a.ClassAccepted || res.Class == a2a.ClassRefused
	if answered && (p.fastest == 0 || took < p.fastest) {
		p.fastest = took
	}
	fresh := started.After(p.backedOff)
	switch {
	case readTimedOut(res.Err, took, full):
		if fresh {
			p.readLimit, p.backedOff = max(allowance/2, 1), time.Now()
		}
	case answered && took > full/2 && took > 2*p.fastest:
		if fresh {
			p.readLimit, p.backedOff = max(allowance*3/4, 1), time.Now()
		}
	case answered:
		p.readLimit = min(p.readLimit+1/allowance, float64(p.size))
	}
}

// readTimedOut: the read timed out after the agent had it for at least half
// its call timeout, or a second.
func readTimedOut(err error, took, full time.Duration) bool {
	return (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) && took >= min(full/2, time.Second)
}

func isTimeout(err error) bool {
	var e *a2a.Error
	return errors.As(err, &e) && e.Reason == a2a.ReasonTimeout
}

// ReadLimit is how many reads the Agent's pool lets run at once now (for
// tests and the bench).
func (d *Dispatcher) ReadLimit(agent Key) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.pools[agent.Delegation]; p != nil {
		return p.readAllowance()
	}
	return 0
}
