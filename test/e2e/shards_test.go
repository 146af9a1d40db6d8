/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
	"github.com/tether-dev/tether/test/faults"
)

const (
	shardCount = 3
	// Two namespaces per shard: 72 leased tasks. The 300 on the
	// shard whose leader stops are the bench's failover rows (make bench):
	// at that size this test outgrows make test on a loaded machine.
	tasksPerNS    = 12
	shardLeaseTTL = 15 * time.Second
	treeSize      = 10 // root, 3 children, 6 grandchildren
)

var (
	leading = regexp.MustCompile(`"leading the shard"`)
	waiting = regexp.MustCompile(`Attempting to acquire leader lease`)
)

// Three shards of two replicas each, as the chart renders them, on an API
// server with ShardedListAndWatch (shards 0 and 1 let it filter; shard 2 is
// told to filter on its own). Shard 0's leader is SIGKILLed with leased
// tasks (ttl 15 s) in flight, then its successor SIGTERMed: every task of
// shard 0 is renewed by the standby before its lease runs out, the other
// shards' renewals go on without a gap, nothing is sent twice and every
// task's outcome is recorded, while a share of the Lease writes fail or time
// out and half of the give-backs fail. Then a tree is deleted and every descendant's
// task is cancelled at the agent.
func TestShardsHandOver(t *testing.T) {
	requireCluster(t)
	s := newShardedRun(t)
	// Every process reaches the API server through a proxy that fails 10%
	// of its Lease writes (500s, 504s after 2 s applied or not) and half of
	// its give-backs.
	leaseFaults := s.failLeaseWrites(faults.LeaseOptions{Rate: 0.1, GiveBackRate: 0.5, Seed: 2, Hold: 2 * time.Second})
	for i := range shardCount {
		s.start(i, fmt.Sprintf("shard-%d-a", i))
		s.start(i, fmt.Sprintf("shard-%d-b", i))
	}
	s.expectLeadersAndLeases()
	s.createTasks()
	s.waitRunning()

	s.handOver("SIGKILL", func(p *pod) { p.Kill() })
	// As Kubernetes would: a new pod stands by in place of the killed one.
	standby := s.start(0, "shard-0-c")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := standby.proc.WaitFor(ctx, waiting) // its cache synced, it waits on the Lease
	s.g.Expect(err).NotTo(HaveOccurred())
	s.handOver("SIGTERM", func(p *pod) { s.g.Expect(p.Stop(15 * time.Second)).To(Succeed()) })

	s.g.Expect(s.agent.lapsedTasks()).To(BeEmpty(), "tasks whose lease lapsed at the agent")
	s.expectSucceeded(s.keys())
	t.Run("DeletedTreeCancelsEveryDescendant", func(t *testing.T) { s.deleteTree(t, s.byShard[0][0]) })
	s.deleteAll(s.namespaces())

	s.g.Expect(s.agent.duplicateSends()).To(BeEmpty(), "message ids sent more than once")
	s.g.Expect(s.agent.sendCount()).To(Equal(len(s.tasks)+treeSize), "one send per Delegation")
	leaseWrites := leaseFaults.Counts()
	t.Logf("Lease writes through the proxy: %d (%d give-backs), failed: %v", leaseWrites.Writes, leaseWrites.GiveBacks, leaseWrites.Faults)
	for _, p := range s.processes() {
		expectNoForbidden(t, p)
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", p.Name(), cluster.Tail(p.Log(), 40))
		}
	}
}

// shardedRun is the chart with shards=3, two replicas a shard, and the
// leased tasks of two namespaces a shard.
type shardedRun struct {
	*shardInstall
	replicas []*shardReplica
	byShard  map[int][]string // shard → its namespaces
	tasks    []*shardTask
}

// shardReplica is one operator process of a shard.
type shardReplica struct {
	shard int
	proc  *pod
}

type shardTask struct {
	shard      int
	key        client.ObjectKey
	remoteTask string
}

func newShardedRun(t *testing.T) *shardedRun {
	s := &shardedRun{shardInstall: newShardInstall(t, "tether-shards", "shards=3", "replicasPerShard=2"), byShard: map[int][]string{}}
	// Two namespaces per shard; realistic names spread over the hash space.
	for k := 0; len(s.byShard[0]) < 2 || len(s.byShard[1]) < 2 || len(s.byShard[2]) < 2; k++ {
		ns := fmt.Sprintf("tenant-%s-%d", s.runID, k)
		if i := shard.Of(ns, shardCount).Index; len(s.byShard[i]) < 2 {
			s.byShard[i] = append(s.byShard[i], ns)
		}
	}
	return s
}

// start runs one more replica of shard i; shard 2 filters on its own.
func (s *shardedRun) start(i int, name string) *shardReplica {
	var extra []string
	if i == 2 {
		extra = []string{"--shard-filtering=client"}
	}
	rep := &shardReplica{shard: i, proc: s.shardInstall.start(i, name, extra...)}
	s.replicas = append(s.replicas, rep)
	return rep
}

// leaderOf waits until exactly one running replica of shard i leads it.
func (s *shardedRun) leaderOf(i int) *shardReplica {
	var found *shardReplica
	s.g.Eventually(func(g Gomega) {
		found = nil
		for _, rep := range s.replicas {
			if rep.shard == i && !rep.proc.Exited() && leading.MatchString(rep.proc.Log()) {
				g.Expect(found).To(BeNil(), "two leaders of shard %d", i)
				found = rep
			}
		}
		g.Expect(found).NotTo(BeNil(), "no leader of shard %d", i)
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
	return found
}

func (s *shardedRun) expectLeadersAndLeases() {
	for i := range shardCount {
		how := "the API server filters"
		if i == 2 {
			how = "filtered before the cache"
		}
		s.g.Expect(s.leaderOf(i).proc.Log()).To(ContainSubstring(how), "shard %d", i)
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: s.r.namespace, Name: fmt.Sprintf("tether-shard-%d-of-3", i)}
		s.g.Expect(kube.Get(context.Background(), key, lease)).To(Succeed())
		s.g.Expect(lease.Labels).To(HaveKeyWithValue(shard.LabelShard, fmt.Sprint(i)))
		s.g.Expect(lease.Annotations).To(HaveKeyWithValue(shard.AnnotationShards, "3"))
	}
}

// createTasks makes each namespace with its Agent and leased tasks that
// run until the agent releases them.
func (s *shardedRun) createTasks() {
	for i := range shardCount {
		for _, ns := range s.byShard[i] {
			s.tenant(ns, 200*time.Millisecond)
			for _, key := range s.createLeased(ns, "leased", tasksPerNS, shardLeaseTTL) {
				s.tasks = append(s.tasks, &shardTask{shard: i, key: key})
			}
		}
	}
}

func (s *shardedRun) keys() []client.ObjectKey {
	keys := make([]client.ObjectKey, 0, len(s.tasks))
	for _, tk := range s.tasks {
		keys = append(keys, tk.key)
	}
	return keys
}

func (s *shardedRun) namespaces() []string {
	var all []string
	for i := range shardCount {
		all = append(all, s.byShard[i]...)
	}
	return all
}

func (s *shardedRun) waitRunning() {
	ids := waitTasksRunning(s.g, s.keys())
	for _, tk := range s.tasks {
		tk.remoteTask = ids[tk.key]
	}
	s.t.Logf("%d leased tasks running over %d shards", len(s.tasks), shardCount)
}

// handOver stops shard 0's leader the given way and checks the renewals
// around it: shard 0's standby renews every task before its ttl runs out,
// and the other shards keep their ttl/3 cadence.
func (s *shardedRun) handOver(how string, stop func(*pod)) {
	old := s.leaderOf(0)
	s.g.Eventually(func() int {
		n := 0
		for _, tk := range s.tasks {
			if len(s.agent.renewalsOf(tk.remoteTask)) >= 2 {
				n++
			}
		}
		return n
	}).WithTimeout(2*shardLeaseTTL).WithPolling(time.Second).Should(Equal(len(s.tasks)), "every task renewed twice before the %s", how)
	at := time.Now()
	s.t.Logf("%s: %s of shard 0", how, old.proc.Name())
	stop(old.proc)
	stopped := time.Now() // every renewal from here on is a standby's
	s.g.Expect(s.leaderOf(0)).NotTo(BeIdenticalTo(old))
	s.g.Eventually(func() []string {
		var unrenewed []string
		for _, tk := range s.tasks {
			if !slices.ContainsFunc(s.agent.renewalsOf(tk.remoteTask), func(r time.Time) bool { return r.After(stopped) }) {
				unrenewed = append(unrenewed, tk.key.String())
			}
		}
		return unrenewed
	}).WithTimeout(3 * shardLeaseTTL).WithPolling(500 * time.Millisecond).Should(BeEmpty())

	var firsts []time.Duration
	for _, tk := range s.tasks {
		renewals := s.agent.renewalsOf(tk.remoteTask)
		// The longest time without a renewal around the stop stays under
		// the ttl (the agent would drop the task) on shard 0, and near the
		// ttl/3 cadence on the shards that kept their leader.
		limit := shardLeaseTTL
		if tk.shard != 0 {
			limit = 2 * shardLeaseTTL / 3
		}
		for k := 1; k < len(renewals); k++ {
			if gap := renewals[k].Sub(renewals[k-1]); renewals[k].After(at.Add(-shardLeaseTTL)) {
				s.g.Expect(gap).To(BeNumerically("<", limit),
					"%s (shard %d) went %s without a renewal around the %s", tk.key, tk.shard, gap, how)
			}
		}
		if tk.shard == 0 {
			k := slices.IndexFunc(renewals, func(r time.Time) bool { return r.After(stopped) })
			firsts = append(firsts, renewals[k].Sub(at))
		}
	}
	slices.Sort(firsts)
	s.t.Logf("%s: shard 0's %d tasks first renewed by the standby %s (median) and %s (last) after the stop; lease duration %s",
		how, len(firsts), firsts[len(firsts)/2].Round(10*time.Millisecond), firsts[len(firsts)-1].Round(10*time.Millisecond),
		shard.DefaultLeaseDuration)
}

// deleteTree builds a three-level tree in ns, deletes its root and waits
// until every task of it got CancelTask at the agent.
func (s *shardedRun) deleteTree(t *testing.T, ns string) {
	ctx := context.Background()
	w := newWorkspace(t, ns)
	w.deleteDelegationsOnCleanup()
	var names []string
	create := func(name, parent string) {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "forever"}}}
		if parent != "" {
			d.Spec.ParentRef = &v1alpha1.LocalRef{Name: parent}
		}
		names = append(names, name)
		w.g.Expect(kube.Create(ctx, d)).To(Succeed())
		w.waitPhase(name, v1alpha1.PhaseRunning) // a child is sent once its parent runs
	}
	create("root", "")
	for c := range 3 {
		mid := fmt.Sprintf("mid-%d", c)
		create(mid, "root")
		for l := range 2 {
			create(fmt.Sprintf("leaf-%d-%d", c, l), mid)
		}
	}
	w.g.Expect(names).To(HaveLen(treeSize))
	ids := map[string]string{}
	for _, name := range names {
		ids[name] = w.get(name).Status.TaskID
	}
	w.g.Expect(kube.Delete(ctx, w.get("root"))).To(Succeed())
	w.g.Eventually(func() []string {
		var open []string
		for _, name := range names {
			if !s.agent.cancelled(ids[name]) {
				open = append(open, name)
			}
		}
		return open
	}).WithTimeout(timeout).WithPolling(tick).Should(BeEmpty(), "tasks of the deleted tree never got CancelTask")
	for _, name := range names {
		w.waitGone(name)
	}
}
