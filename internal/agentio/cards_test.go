/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// A namespace's card reads run at most its share at once: under eight
// places for card reads, one namespace whose eight Agents never answer
// holds two places, and another namespace's card read runs at once. When a
// hung read ends, the namespace's oldest waiting read takes its place.
func TestCardReadsShareTheCallsInFlightAcrossNamespaces(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	d.SetMemoryLimit(budgetFor(32, 1), 1)
	g.Expect(cap(d.cardPlaces)).To(Equal(8))
	g.Expect(d.cardShare()).To(Equal(2))
	hung := make(chan struct{})
	defer close(hung)
	read := func(ns, name string, answered chan<- string) Call {
		agent := types.NamespacedName{Namespace: ns, Name: name}
		return Call{Key: cardKey(agent), Agent: agent, do: func(ctx context.Context) Answer {
			if answered == nil {
				select {
				case <-hung:
				case <-ctx.Done():
				}
				return Answer{Err: ctx.Err()}
			}
			answered <- name
			return Answer{}
		}}
	}
	holes := make([]Call, 8)
	for i := range holes {
		holes[i] = read("crowded", fmt.Sprintf("hole-%d", i), nil)
		g.Expect(d.Submit(holes[i])).To(BeTrue())
	}
	running := func() int {
		n := 0
		for _, c := range holes {
			if d.State(c.Key).Running {
				n++
			}
		}
		return n
	}
	g.Eventually(running).Should(Equal(2))
	for _, c := range holes {
		g.Expect(d.State(c.Key).Pending).To(BeTrue(), "a waiting read is pending: it is not asked for again")
		g.Expect(d.Submit(c)).To(BeFalse())
	}

	answered := make(chan string, 1)
	g.Expect(d.Submit(read("other", "agent", answered))).To(BeTrue())
	g.Eventually(answered, 5*time.Second).Should(Receive(Equal("agent")), "another namespace's read is not behind the crowd")
	g.Consistently(running, 200*time.Millisecond).Should(Equal(2), "the crowded namespace keeps to its share")
}

// With a share of one, a namespace's reads run one after the other, oldest
// first, and the share is given back when the last one ends.
func TestCardReadsOfANamespaceWaitOldestFirst(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	d.CardReadsPerNamespace = 1
	release := make(chan struct{})
	order := make(chan string, 3)
	read := func(name string, block bool) Call {
		agent := types.NamespacedName{Namespace: "ns", Name: name}
		return Call{Key: cardKey(agent), Agent: agent, do: func(ctx context.Context) Answer {
			if block {
				<-release
			}
			order <- name
			return Answer{}
		}}
	}
	first := read("first", true)
	g.Expect(d.Submit(first)).To(BeTrue())
	g.Eventually(func() bool { return d.State(first.Key).Running }).Should(BeTrue())
	g.Expect(d.Submit(read("second", false))).To(BeTrue())
	g.Expect(d.Submit(read("third", false))).To(BeTrue())
	g.Consistently(order, 200*time.Millisecond).ShouldNot(Receive())
	close(release)
	for _, name := range []string{"first", "second", "third"} {
		g.Eventually(order).Should(Receive(Equal(name)))
	}
	g.Eventually(func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.cards)
	}).Should(BeZero(), "an idle namespace keeps nothing")
}

// Card reads hold at most their own places: when card servers in every
// namespace accept connections and never answer, renewals, cancels and
// polls of other Agents still run at once.
func TestCardReadsThatNeverAnswerDoNotHoldUpOtherCalls(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	d.SetMemoryLimit(budgetFor(16, 1), 1) // 4 places for card reads, a share of 1
	g.Expect([]int{cap(d.cardPlaces), d.cardShare()}).To(Equal([]int{4, 1}))
	hung := make(chan struct{})
	defer close(hung)
	holes := make([]Call, 0, 32)
	for i := range 32 { // more than all call places: each would hold one
		agent := types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i), Name: "hole"}
		c := Call{Key: cardKey(agent), Agent: agent, do: func(ctx context.Context) Answer {
			select {
			case <-hung:
			case <-ctx.Done():
			}
			return Answer{Err: ctx.Err()}
		}}
		holes = append(holes, c)
		g.Expect(d.Submit(c)).To(BeTrue())
	}
	running := func() int {
		n := 0
		for _, c := range holes {
			if d.State(c.Key).Running {
				n++
			}
		}
		return n
	}
	g.Eventually(running).Should(Equal(4))
	g.Consistently(running, 200*time.Millisecond).Should(Equal(4), "card reads keep to their places")

	answered := make(chan Kind, 3)
	for i, c := range []Call{
		{Key: Key{Kind: KindGet}, leased: true},
		{Key: Key{Kind: KindCancel}},
		{Key: Key{Kind: KindGet}},
	} {
		c.Delegation = types.NamespacedName{Namespace: "team", Name: fmt.Sprintf("d-%d", i)}
		c.Agent = types.NamespacedName{Namespace: "team", Name: "busy"}
		c.PoolSize = 4
		kind := c.Kind
		c.do = func(context.Context) Answer { answered <- kind; return Answer{} }
		g.Expect(d.Submit(c)).To(BeTrue())
	}
	for range 3 {
		g.Eventually(answered, 5*time.Second).Should(Receive(), "a renewal, a cancel and a poll run beside the hung card reads")
	}
}
