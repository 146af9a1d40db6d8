/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/faults"
)

const (
	reshardNamespaces = 6
	reshardLeaseTTL   = 30 * time.Second
)

// reshardTasksPerNS is how many leased tasks each namespace holds before
// the roll: 10 in make test; E2E_RESHARD_IN_FLIGHT (a total, spread over
// the namespaces) runs the same test at a larger size, such as 1000.
func reshardTasksPerNS(t *testing.T) int {
	s := os.Getenv("E2E_RESHARD_IN_FLIGHT")
	if s == "" {
		return 10
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < reshardNamespaces {
		t.Fatalf("E2E_RESHARD_IN_FLIGHT=%q: want a number of tasks, at least %d", s, reshardNamespaces)
	}
	return n / reshardNamespaces
}

// Two shards of two replicas, resharded to three by a rolling update
// (helm upgrade --set shards=3, then each Deployment's pods replaced one
// at a time, as Kubernetes rolls them, while the new shard's pods start)
// with leased tasks (ttl 30 s) in flight and more created during the roll:
// no two shards of different counts ever hold overlapping Leases at once,
// nothing is sent twice, no lease lapses, and every task settles, while a
// share of the operators' Lease writes fail or time out and half of their
// give-backs fail.
func TestReshardByRollingUpdate(t *testing.T) {
	requireCluster(t)
	s := newShardInstall(t, "tether-reshard", "shards=2", "replicasPerShard=2")
	g, agent := s.g, s.agent
	// Every operator process reaches the API server through a proxy that
	// fails 10% of its Lease writes (500s, and 504s after 2 s whether or
	// not the write landed) and half of its give-backs.
	leaseFaults := s.failLeaseWrites(faults.LeaseOptions{Rate: 0.1, GiveBackRate: 0.5, Seed: 1, Hold: 2 * time.Second})
	old := [][]*pod{{s.start(0, "old-0-a"), s.start(0, "old-0-b")}, {s.start(1, "old-1-a"), s.start(1, "old-1-b")}}

	// Namespaces of realistic names, chosen so that every kind of move
	// happens: from shard 0 of 2 to 0 and to 1 of 3, from 1 of 2 to 1 and
	// to 2 of 3 (shard 1 of 3 takes namespaces from both old shards).
	var namespaces []string
	moves := map[[2]int]int{}
	for k := 0; len(namespaces) < reshardNamespaces; k++ {
		ns := fmt.Sprintf("reshard-%s-%d", s.runID, k)
		move := [2]int{shard.Of(ns, 2).Index, shard.Of(ns, 3).Index}
		if moves[move] >= 2 || (len(moves) < 4 && moves[move] >= 1) {
			continue
		}
		moves[move]++
		namespaces = append(namespaces, ns)
		// Polled no more often than renewed: every read counted is a
		// renewal at ttl/3, as at an Agent of the default pollInterval.
		s.tenant(ns, reshardLeaseTTL)
	}
	t.Logf("namespaces by (shard of 2, shard of 3): %v", moves)
	var tasks []client.ObjectKey
	create := func(prefix string, perNS int) {
		for _, ns := range namespaces {
			tasks = append(tasks, s.createLeased(ns, prefix, perNS, reshardLeaseTTL)...)
		}
	}
	create("before", reshardTasksPerNS(t))
	taskIDs := waitTasksRunning(g, tasks)

	// Watch the shard Leases through the roll: a Lease held by a shard of
	// one count must never overlap one held by a shard of the other.
	overlaps := s.watchLeaseOverlaps()

	rolled := time.Now()
	helm(t, "upgrade", s.r.name, chartDir, "--namespace", s.r.namespace, "--reuse-values", "--set", "shards=3")
	// The new shard's Deployment starts at once; the others roll one pod
	// at a time: a new pod is started, then an old one stopped (SIGTERM).
	s.start(2, "new-2-a")
	s.start(2, "new-2-b")
	for i, pods := range old {
		for k, p := range pods {
			s.start(i, fmt.Sprintf("new-%d-%c", i, 'a'+k))
			if k == 0 {
				create(fmt.Sprintf("during-%d", i), 2) // sends while the shards change hands
			}
			g.Expect(p.Stop(15 * time.Second)).To(Succeed())
		}
	}
	maps.Copy(taskIDs, waitTasksRunning(g, tasks))
	// Every task is renewed by a shard of 3 after the last old pod stopped.
	lastStop := time.Now()
	g.Eventually(func() []string {
		var unrenewed []string
		for key, id := range taskIDs {
			if !slices.ContainsFunc(agent.renewalsOf(id), func(at time.Time) bool { return at.After(lastStop) }) {
				unrenewed = append(unrenewed, key.String())
			}
		}
		return unrenewed
	}).WithTimeout(2 * reshardLeaseTTL).WithPolling(500 * time.Millisecond).Should(BeEmpty())
	g.Expect(overlaps()).To(BeEmpty(), "Leases of overlapping shards of 2 and 3 held at once")
	leaseWrites := leaseFaults.Counts()
	t.Logf("Lease writes through the proxy: %d (%d give-backs), failed: %v", leaseWrites.Writes, leaseWrites.GiveBacks, leaseWrites.Faults)
	g.Expect(leaseWrites.Faults[faults.WriteTimedOut]+leaseWrites.Faults[faults.WriteTimedOutUnapplied]).
		To(BeNumerically(">", 0), "timed-out Lease writes")

	// One renewal interval more, so the gaps include the new shards' cadence.
	time.Sleep(reshardLeaseTTL / 3)
	var gaps []time.Duration
	for _, id := range taskIDs {
		renewals := agent.renewalsOf(id)
		for k := 1; k < len(renewals); k++ {
			if renewals[k].After(rolled) {
				gaps = append(gaps, renewals[k].Sub(renewals[k-1]))
			}
		}
	}
	slices.Sort(gaps)
	longest := gaps[len(gaps)-1]
	t.Logf("resharded 2 → 3 in %s with %d leased tasks; time between renewals %s (median), %s (longest); ttl %s",
		lastStop.Sub(rolled).Round(100*time.Millisecond), len(taskIDs), gaps[len(gaps)/2].Round(10*time.Millisecond),
		longest.Round(10*time.Millisecond), reshardLeaseTTL)
	g.Expect(longest).To(BeNumerically("<", reshardLeaseTTL), "a lease went a whole ttl without a renewal")
	// Renewals keep their ttl/3 cadence across the roll: no read is asked
	// for again on top of the scheduled one.
	g.Expect(gaps[len(gaps)/2]).To(BeNumerically(">=", reshardLeaseTTL/6), "renewals come far more often than every ttl/3")
	g.Expect(agent.lapsedTasks()).To(BeEmpty(), "tasks whose lease lapsed at the agent")

	s.expectSucceeded(tasks)
	g.Expect(agent.duplicateSends()).To(BeEmpty(), "message ids sent more than once")
	g.Expect(agent.sendCount()).To(Equal(len(tasks)), "one send per Delegation")
	for _, p := range s.processes() {
		expectNoForbidden(t, p)
	}
	s.deleteAll(namespaces)
}
