/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
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
// nothing is sent twice, no lease lapses, and every task settles.
func TestReshardByRollingUpdate(t *testing.T) {
	requireCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	runID := newRunID()
	r := installChart(t, "tether-reshard", "tether-reshard-"+runID, "shards=2", "replicasPerShard=2", "cancelTimeout=20s")
	agent := newRecordingAgent()
	t.Cleanup(agent.Close)
	var procs []*cluster.Process
	start := func(i int, name string) *cluster.Process {
		d := &appsv1.Deployment{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: fmt.Sprintf("%s-shard-%d", r.name, i)}, d)).To(Succeed())
		p := startOperatorOf(t, r, d, name)
		procs = append(procs, p)
		return p
	}
	old := [][]*cluster.Process{{start(0, "old-0-a"), start(0, "old-0-b")}, {start(1, "old-1-a"), start(1, "old-1-b")}}

	// Namespaces of realistic names, chosen so that every kind of move
	// happens: from shard 0 of 2 to 0 and to 1 of 3, from 1 of 2 to 1 and
	// to 2 of 3 (shard 1 of 3 takes namespaces from both old shards).
	var namespaces []string
	moves := map[[2]int]int{}
	for k := 0; len(namespaces) < reshardNamespaces; k++ {
		ns := fmt.Sprintf("reshard-%s-%d", runID, k)
		move := [2]int{shard.Of(ns, 2).Index, shard.Of(ns, 3).Index}
		if moves[move] >= 2 || (len(moves) < 4 && moves[move] >= 1) {
			continue
		}
		moves[move]++
		namespaces = append(namespaces, ns)
		newNamespace(t, ns)
		w := newWorkspace(t, ns)
		// Polled no more often than renewed: every read counted is a
		// renewal at ttl/3, as at an Agent of the default pollInterval.
		w.createAgentPolled("agent", agent.URL(), reshardLeaseTTL)
		w.deleteDelegationsOnCleanup()
	}
	t.Logf("namespaces by (shard of 2, shard of 3): %v", moves)
	var tasks []client.ObjectKey
	create := func(prefix string, perNS int) {
		for _, ns := range namespaces {
			for n := range perNS {
				d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, n)},
					Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.LocalRef{Name: "agent"},
						Message: &v1alpha1.Message{Text: "hold until released"},
						Lease:   &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: reshardLeaseTTL}}}}
				g.Expect(kube.Create(ctx, d)).To(Succeed())
				tasks = append(tasks, client.ObjectKeyFromObject(d))
			}
		}
	}
	create("before", reshardTasksPerNS(t))
	taskIDs := waitTasksRunning(g, tasks)

	// Watch the shard Leases through the roll: a Lease held by a shard of
	// one count must never overlap one held by a shard of the other.
	stopWatch := make(chan struct{})
	var overlaps []string
	var watched sync.WaitGroup
	watched.Go(func() {
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if o := overlappingLeases(r.namespace); o != "" {
				overlaps = append(overlaps, o)
			}
		}
	})

	rolled := time.Now()
	helm(t, "upgrade", r.name, chartDir, "--namespace", r.namespace, "--reuse-values", "--set", "shards=3")
	// The new shard's Deployment starts at once; the others roll one pod
	// at a time: a new pod is started, then an old one stopped (SIGTERM).
	start(2, "new-2-a")
	start(2, "new-2-b")
	for i, pods := range old {
		for k, p := range pods {
			start(i, fmt.Sprintf("new-%d-%c", i, 'a'+k))
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
	close(stopWatch)
	watched.Wait()
	g.Expect(overlaps).To(BeEmpty(), "Leases of overlapping shards of 2 and 3 held at once")

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

	agent.releaseAll()
	g.Eventually(func(g Gomega) {
		for _, key := range tasks {
			d := &v1alpha1.Delegation{}
			g.Expect(kube.Get(ctx, key, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %+v", key, d.Status.Outcome)
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(agent.duplicateSends()).To(BeEmpty(), "message ids sent more than once")
	g.Expect(agent.sendCount()).To(Equal(len(tasks)), "one send per Delegation")
	for _, p := range procs {
		expectNoForbidden(t, p)
	}
	for _, ns := range namespaces {
		g.Expect(kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(ns))).To(Succeed())
	}
	g.Eventually(func() int {
		n := 0
		for _, ns := range namespaces {
			list := &v1alpha1.DelegationList{}
			if kube.List(ctx, list, client.InNamespace(ns)) != nil {
				return -1
			}
			n += len(list.Items)
		}
		return n
	}).WithTimeout(timeout).WithPolling(tick).Should(BeZero())
}

// waitTasksRunning waits until every task runs and returns its task id.
func waitTasksRunning(g *WithT, tasks []client.ObjectKey) map[client.ObjectKey]string {
	ids := map[client.ObjectKey]string{}
	g.Eventually(func(g Gomega) {
		for _, key := range tasks {
			if ids[key] != "" {
				continue
			}
			d := &v1alpha1.Delegation{}
			g.Expect(kube.Get(context.Background(), key, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning), "%s: %+v", key, d.Status.Outcome)
			ids[key] = d.Status.TaskID
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
	return ids
}

// overlappingLeases names two held shard Leases of different counts whose
// ranges overlap, or is empty.
func overlappingLeases(namespace string) string {
	list := &coordinationv1.LeaseList{}
	if kube.List(context.Background(), list, client.InNamespace(namespace), client.HasLabels{shard.LabelShard}) != nil {
		return ""
	}
	type heldShard struct {
		shard.Shard
		name, holder string
	}
	var held []heldShard
	now := time.Now()
	for _, l := range list.Items {
		var i, n int
		if _, err := fmt.Sscan(l.Labels[shard.LabelShard], &i); err != nil {
			continue
		}
		if _, err := fmt.Sscan(l.Annotations[shard.AnnotationShards], &n); err != nil {
			continue
		}
		s := l.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil ||
			!now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second)) {
			continue
		}
		held = append(held, heldShard{shard.Shard{Index: i, Count: n}, l.Name, *s.HolderIdentity})
	}
	for _, a := range held {
		for _, b := range held {
			if a.Count != b.Count && a.Overlaps(b.Shard) {
				return fmt.Sprintf("%s (%s) and %s (%s)", a.name, a.holder, b.name, b.holder)
			}
		}
	}
	return ""
}
