/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// A fair share of an Agent's places across the namespaces using it. An
// Agent shared through AgentGrants serves Delegations of many namespaces
// from one pool; without a share, one namespace that submits a thousand
// sends fills every place and the others wait behind all of them. So new
// work (sends, replies, look-ups and plain polls) is taken from the
// namespace holding the fewest places among those waiting, oldest first
// within it: while others wait, no namespace is given more than
// ceil(places / waiting namespaces). A namespace alone uses every place
// (the share never leaves a place idle), and a call already running is
// never preempted. Cancels and renewals keep their order (priority, then
// the lease that lapses first): they protect work already sent, and a
// namespace has only as many of them as the tasks its fair share started.

import (
	"cmp"
	"slices"
)

// fairQueue is the queue whose calls are taken by namespace share.
const fairQueue = priorities - 1

// NamespaceLoad is one namespace's calls at one Agent's pool.
type NamespaceLoad struct {
	Namespace string
	// Running holds a place (running, or about to leave).
	Running int
	Queued  int
}

// shareOf is the namespace whose share a call counts against: its
// Delegation's (an Agent's card read counts against the Agent's own).
func shareOf(q *pending) string { return q.call.Delegation.Namespace }

// queued counts a call added to queue prio.
func (p *pool) queued(q *pending, prio int) {
	if p.waiting[prio] == nil {
		p.waiting[prio] = map[string]int{}
	}
	p.waiting[prio][shareOf(q)]++
}

// dequeued counts a call taken out of queue prio.
func (p *pool) dequeued(q *pending, prio int) { decrement(p.waiting[prio], shareOf(q)) }

// taken counts a call given a place; freed, its place given back.
func (p *pool) taken(q *pending) {
	if p.busy == nil {
		p.busy = map[string]int{}
	}
	p.busy[shareOf(q)]++
}

func (p *pool) freed(q *pending) { decrement(p.busy, shareOf(q)) }

func decrement(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// pick is the index in queue i of the call to run next, -1 when none may:
// the first one that may run, or in the fair queue with namespaces
// waiting, the first of the waiting namespace that holds the fewest places.
func (p *pool) pick(i int, may func(*pending) bool) int {
	queue := p.queues[i]
	if i != fairQueue || len(p.waiting[i]) <= 1 {
		return slices.IndexFunc(queue, may)
	}
	floor := -1
	for ns := range p.waiting[i] {
		if n := p.busy[ns]; floor < 0 || n < floor {
			floor = n
		}
	}
	best, fewest := -1, 0
	for j, q := range queue {
		if !may(q) {
			continue
		}
		n := p.busy[shareOf(q)]
		if n == floor {
			return j
		}
		if best < 0 || n < fewest {
			best, fewest = j, n
		}
	}
	return best
}

// loads is the pool's calls by namespace, ordered by namespace.
func (p *pool) loads() []NamespaceLoad {
	by := map[string]*NamespaceLoad{}
	load := func(ns string) *NamespaceLoad {
		if by[ns] == nil {
			by[ns] = &NamespaceLoad{Namespace: ns}
		}
		return by[ns]
	}
	for ns, n := range p.busy {
		load(ns).Running = n
	}
	for i := range p.waiting {
		for ns, n := range p.waiting[i] {
			load(ns).Queued += n
		}
	}
	out := make([]NamespaceLoad, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b NamespaceLoad) int { return cmp.Compare(a.Namespace, b.Namespace) })
	return out
}
