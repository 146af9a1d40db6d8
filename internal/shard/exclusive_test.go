/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestOverlaps(t *testing.T) {
	g := NewWithT(t)
	of := func(i, n int) Shard { return Shard{Index: i, Count: n} }
	g.Expect(of(0, 2).Overlaps(of(1, 3))).To(BeTrue())  // [0, 1/2) and [1/3, 2/3)
	g.Expect(of(1, 2).Overlaps(of(1, 3))).To(BeTrue())  // [1/2, 1) and [1/3, 2/3)
	g.Expect(of(0, 2).Overlaps(of(2, 3))).To(BeFalse()) // [0, 1/2) and [2/3, 1)
	g.Expect(of(0, 3).Overlaps(of(1, 3))).To(BeFalse()) // neighbours share no namespace
	g.Expect(of(0, 1).Overlaps(of(2, 3))).To(BeTrue())  // one shard holds everything
}

// candidate runs a shard's leader election as the operator configures it
// and notes while it leads.
type candidate struct {
	shard  Shard
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	leads  bool
}

func (c *candidate) leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leads
}

// A shard of one count does not lead while a shard of another count whose
// range overlaps it leads; it takes over once that one lets go. Shards of
// different counts that share no namespace lead side by side.
func TestShardWaitsForOverlappingShardsOfAnotherCount(t *testing.T) {
	g := NewWithT(t)
	cfg, scheme := startAPIServer(t, nil)
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	timings := Flags{LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	var all []*candidate
	// overlapping reports two candidates that lead at once over a shared range.
	overlapping := func() []Shard {
		for _, a := range all {
			for _, b := range all {
				if a != b && a.leading() && b.leading() && a.shard.Overlaps(b.shard) {
					return []Shard{a.shard, b.shard}
				}
			}
		}
		return nil
	}
	start := func(s Shard) *candidate {
		setup := &Setup{Shard: s, Flags: timings, kube: kube, cfg: cfg}
		o := ctrl.Options{LeaderElection: true, LeaderElectionNamespace: "default"}
		g.Expect(setup.Configure(&o)).To(Succeed())
		g.Expect(setup.labelLease(context.Background(), "default")).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		c := &candidate{shard: s, cancel: cancel, done: make(chan struct{})}
		el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: o.LeaderElectionResourceLockInterface, LeaseDuration: timings.LeaseDuration,
			RenewDeadline: timings.RenewDeadline, RetryPeriod: timings.RetryPeriod, ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					c.mu.Lock()
					c.leads = true
					c.mu.Unlock()
				},
				OnStoppedLeading: func() {
					c.mu.Lock()
					c.leads = false
					c.mu.Unlock()
				},
			}})
		g.Expect(err).NotTo(HaveOccurred())
		go func() { defer close(c.done); el.Run(ctx) }()
		all = append(all, c)
		t.Cleanup(func() { cancel(); <-c.done })
		return c
	}
	stop := func(c *candidate) {
		c.cancel()
		<-c.done
		c.mu.Lock()
		c.leads = false
		c.mu.Unlock()
	}

	old0, old1 := start(Shard{0, 2}), start(Shard{1, 2})
	g.Eventually(func() bool { return old0.leading() && old1.leading() }).WithTimeout(30 * time.Second).Should(BeTrue())
	new0, new1, new2 := start(Shard{0, 3}), start(Shard{1, 3}), start(Shard{2, 3})
	g.Consistently(func() bool { return new0.leading() || new1.leading() || new2.leading() }).
		WithTimeout(3*time.Second).Should(BeFalse(), "a shard of 3 led while the shards of 2 led")

	// Shard 0 of 2 stops (a rolling update): 0 of 3 takes over; 1 of 3
	// still shares namespaces with 1 of 2.
	stop(old0)
	g.Eventually(new0.leading).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Consistently(func() bool { return new1.leading() || new2.leading() }).WithTimeout(2 * time.Second).Should(BeFalse())
	stop(old1)
	g.Eventually(func() bool { return new1.leading() && new2.leading() }).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Expect(overlapping()).To(BeEmpty())

	// Candidates of two counts that start at the same moment: never two
	// overlapping leaders, whoever wins.
	for _, c := range []*candidate{new0, new1, new2} {
		stop(c)
	}
	done := make(chan struct{})
	var seen []Shard
	go func() {
		defer close(done)
		deadline := time.Now().Add(6 * time.Second)
		for time.Now().Before(deadline) && seen == nil {
			seen = overlapping()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	a, b := start(Shard{0, 2}), start(Shard{0, 3})
	<-done
	g.Expect(seen).To(BeEmpty(), "two overlapping shards led at once")
	g.Eventually(func() bool { return a.leading() || b.leading() }).WithTimeout(30 * time.Second).Should(BeTrue())
}
