/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

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
	d.init()
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
	d.init()
	return d.agentEvents
}
