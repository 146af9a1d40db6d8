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

// Twenty namespaces with mixed load at one shared Agent: one namespace
// alone takes every place, but once others wait, each freed place goes to
// the waiting namespace holding the fewest, so none is given more than
// ceil(places / waiting namespaces) while others wait. Each call holds its
// place until the test lets it go, one at a time, so every hand-over is
// seen exactly.
func TestASharedAgentsPlacesAreSplitFairlyAcrossNamespaces(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	agent := types.NamespacedName{Namespace: "platform-agents", Name: "shared"}
	const places = 8
	type start struct {
		ns      string
		release chan struct{}
	}
	starts := make(chan start, 1024)
	submitted := map[string]int{}
	waiting := map[string]int{}
	submit := func(ns string) {
		i := submitted[ns]
		submitted[ns]++
		waiting[ns]++
		g.Expect(d.Submit(Call{Key: Key{Delegation: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("task-%03d", i)}, Kind: KindStart},
			Agent: agent, PoolSize: places,
			do: func(context.Context) Answer {
				release := make(chan struct{})
				starts <- start{ns: ns, release: release}
				<-release
				return Answer{}
			}})).To(BeTrue())
	}
	next := func() start {
		select {
		case s := <-starts:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no call took the freed place")
			return start{}
		}
	}
	load := map[string]int{}
	for i := range 20 {
		ns := fmt.Sprintf("team-%s-%02d", []string{"payments", "search", "ml", "web"}[i%4], i)
		switch {
		case i == 0:
			load[ns] = 200
		case i < 5:
			load[ns] = 20
		default:
			load[ns] = 3
		}
	}
	heavy := "team-payments-00"

	held := map[string]int{}
	var running []start
	for range places {
		submit(heavy)
	}
	for range places {
		s := next()
		g.Expect(s.ns).To(Equal(heavy))
		held[s.ns]++
		waiting[s.ns]--
		running = append(running, s)
	}
	for ns, n := range load {
		for submitted[ns] < n {
			submit(ns)
		}
	}
	stats := d.Stats()
	g.Expect(stats).To(HaveLen(1))
	g.Expect(stats[0].Namespaces).To(HaveLen(20), "the load is reported by namespace")
	g.Expect(stats[0].Namespaces).To(ContainElement(NamespaceLoad{Namespace: heavy, Running: places, Queued: 200 - places}))

	total, picks := 0, 0
	for _, n := range load {
		total += n
	}
	ran := places
	for len(running) > 0 {
		close(running[0].release)
		held[running[0].ns]--
		running = running[1:]
		floor, contenders := -1, 0
		for ns, n := range waiting {
			if n == 0 {
				continue
			}
			contenders++
			if floor < 0 || held[ns] < floor {
				floor = held[ns]
			}
		}
		if contenders == 0 {
			continue
		}
		s := next()
		picks++
		g.Expect(waiting[s.ns]).To(BeNumerically(">", 0))
		g.Expect(held[s.ns]).To(Equal(floor), "a place went to %s holding %d while a namespace holding %d waited", s.ns, held[s.ns], floor)
		held[s.ns]++
		waiting[s.ns]--
		ran++
		share := (places + contenders - 1) / contenders
		g.Expect(held[s.ns]).To(BeNumerically("<=", share), "%s holds more than its share of %d with %d namespaces waiting", s.ns, share, contenders)
		running = append(running, s)
	}
	g.Expect(ran).To(Equal(total), "every call ran")
	g.Expect(picks).To(Equal(total - places))
	g.Eventually(d.Stats).Should(BeEmpty())
}

// Renewals keep their order by lapse time whatever namespace they come
// from: the share applies to new work only.
func TestRenewalsAreNotReorderedByNamespace(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	agent := types.NamespacedName{Namespace: "platform-agents", Name: "shared"}
	release := make(chan struct{})
	order := make(chan string, 8)
	call := func(ns, name string, kind Kind, lapses time.Time, block bool) Call {
		return Call{Key: Key{Delegation: types.NamespacedName{Namespace: ns, Name: name}, Kind: kind}, Agent: agent, PoolSize: 1, Lapses: lapses,
			do: func(context.Context) Answer {
				if block {
					<-release
				}
				order <- ns + "/" + name
				return Answer{}
			}}
	}
	now := time.Now()
	g.Expect(d.Submit(call("team-a", "busy", KindStart, time.Time{}, true))).To(BeTrue())
	g.Eventually(func() bool {
		return d.State(Key{Delegation: types.NamespacedName{Namespace: "team-a", Name: "busy"}, Kind: KindStart}).Running
	}).Should(BeTrue())
	g.Expect(d.Submit(call("team-a", "late", KindGet, now.Add(3*time.Second), false))).To(BeTrue())
	g.Expect(d.Submit(call("team-a", "soon", KindGet, now.Add(time.Second), false))).To(BeTrue())
	g.Expect(d.Submit(call("team-b", "later", KindGet, now.Add(5*time.Second), false))).To(BeTrue())
	close(release)
	got := make([]string, 0, 4)
	for range 4 {
		got = append(got, <-order)
	}
	g.Expect(got).To(Equal([]string{"team-a/busy", "team-a/soon", "team-a/late", "team-b/later"}))
}
