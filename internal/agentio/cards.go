/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// KindCard reads an Agent's card (and probes whether it lists tasks). It
// runs on the Agent's own pool like every other call: an agent whose card
// server accepts connections and never answers fills only its own room,
// never the Agent controller's workers.
const KindCard Kind = "card"

// ProbeTimeout bounds the ListTasks capability probe after a card read: an
// agent that takes calls and never answers must not hold its card back for
// its whole requestTimeout. Without an answer, what was known stands.
const ProbeTimeout = 5 * time.Second

// CardAnswer is what a card read found.
type CardAnswer struct {
	// Card is the card (nil when the read failed: Answer.Err says why).
	Card *a2a.Card
	// Generation is the Agent generation the card was read for.
	Generation int64
	// Listing is what the probe found out (ListUnknown: keep what was known).
	Listing a2a.ListCapability
	// ListErr is why the probe got no usable answer.
	ListErr error
}

// cardKey names an Agent's card read among the calls.
func cardKey(agent types.NamespacedName) Key { return Key{Delegation: agent, Kind: KindCard} }

// ReadCard reads the Agent's card on the Agent's pool, under the Agent's
// call timeout, then probes whether the agent lists tasks for the operator.
// The answer wakes the Agent through AgentEvents; TakeCard takes it. At
// most one read per Agent is on its way.
func (d *Dispatcher) ReadCard(agent *v1alpha1.Agent) bool {
	a := agent.DeepCopy()
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
	c := Call{Key: cardKey(key), Agent: key}
	if a.Spec.MaxConcurrentCalls != nil {
		c.PoolSize = int(*a.Spec.MaxConcurrentCalls)
	}
	if a.Spec.RequestTimeout != nil {
		c.Timeout = a.Spec.RequestTimeout.Duration
	}
	connector := d.Connector
	c.do = func(ctx context.Context) Answer {
		out := &CardAnswer{Generation: a.Generation}
		ep, err := connector.endpoint(ctx, a, "")
		if err != nil {
			return Answer{Err: err, Card: out}
		}
		if a.Spec.CardSignature != nil {
			// ep is a copy: the shared endpoint keeps no key set.
			if ep.CardKeys, err = connector.CardKeys(ctx, a); err != nil {
				return Answer{Err: err, Card: out}
			}
		}
		card, err := a2a.ResolveCard(ctx, ep)
		if err != nil {
			return Answer{Err: err, Card: out}
		}
		out.Card = card
		out.Listing, out.ListErr = probeListing(ctx, ep, card)
		return Answer{Card: out}
	}
	return d.Submit(c)
}

// probeListing asks the agent, as the operator, whether it lists tasks.
func probeListing(ctx context.Context, ep a2a.Endpoint, card *a2a.Card) (a2a.ListCapability, error) {
	c, err := a2a.NewClient(ctx, ep, card)
	if err != nil {
		return a2a.ListUnknown, err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	return a2a.ProbeListing(pctx, c)
}

// TakeCard returns and forgets the answer of an Agent's card read.
func (d *Dispatcher) TakeCard(agent types.NamespacedName) (Answer, bool) {
	return d.Take(cardKey(agent))
}

// CardPending reports a card read of the Agent that is queued or running.
func (d *Dispatcher) CardPending(agent types.NamespacedName) bool {
	return d.State(cardKey(agent)).Pending
}

// AgentEvents carries one event per finished card read (for source.Channel).
func (d *Dispatcher) AgentEvents() <-chan event.GenericEvent {
	return d.agentEvents
}

// A fair share of card reads across namespaces. Each card read holds a
// place under the operator-wide bound on calls in flight (memory.go) for as
// long as the agent takes to answer, never one of those kept for renewals
// and cancels, and card reads together hold at most a quarter of the
// places: card servers that accept connections and never answer cannot
// make renewals, cancels or sends wait. Within that, a namespace with many
// such Agents would hold every card read's place, and another namespace's
// new Agent would wait for them to time out.
// So the card reads of one namespace run at most cardShare at once; the
// others wait, oldest first, without holding a place or a pool's worker.

// DefaultCardReadsPerNamespace is the share when the operator sets no bound
// on calls in flight.
const DefaultCardReadsPerNamespace = 8

var cardReadsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "tether_agent_card_reads_waiting",
	Help: "Card reads waiting because their namespace already runs its share of card reads.",
})

func init() { metrics.Registry.MustRegister(cardReadsWaiting) }

// namespaceCards is one namespace's card reads: how many run, and those
// waiting for one of them to end.
type namespaceCards struct {
	running int
	waiting []*pending
}

// cardShare is how many card reads of one namespace may run at once:
// CardReadsPerNamespace when set, else a quarter of the card reads' places
// (at least one), so at least four namespaces' black holes are needed to
// hold every card read's place.
func (d *Dispatcher) cardShare() int {
	switch {
	case d.CardReadsPerNamespace > 0:
		return d.CardReadsPerNamespace
	case d.cardPlaces != nil:
		return max(cap(d.cardPlaces)/4, 1)
	}
	return DefaultCardReadsPerNamespace
}

// cardRoom takes a place in the namespace's share for a card read, or
// keeps the read waiting (it stays Pending: no second read is asked for).
// It is called with d.mu held.
func (d *Dispatcher) cardRoom(c Call) bool {
	ns := d.cards[c.Agent.Namespace]
	if ns == nil {
		ns = &namespaceCards{}
		d.cards[c.Agent.Namespace] = ns
	}
	if ns.running < d.cardShare() {
		ns.running++
		return true
	}
	q := &pending{call: c, queued: time.Now()}
	d.calls[c.Key] = q
	ns.waiting = append(ns.waiting, q)
	cardReadsWaiting.Inc()
	return false
}

// cardDone gives a card read's place to the namespace's oldest waiting
// read. It is called with d.mu held.
func (d *Dispatcher) cardDone(namespace string) {
	ns := d.cards[namespace]
	if ns == nil {
		return
	}
	ns.running--
	for len(ns.waiting) > 0 {
		q := ns.waiting[0]
		ns.waiting = ns.waiting[1:]
		cardReadsWaiting.Dec()
		if d.calls[q.call.Key] != q {
			continue // dropped while it waited
		}
		ns.running++
		d.toPool(q.call, q.queued)
		return
	}
	if ns.running <= 0 {
		delete(d.cards, namespace)
	}
}
