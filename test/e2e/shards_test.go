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
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
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
// task's outcome is recorded. Then a tree is deleted and every descendant's
// task is cancelled at the agent.
func TestShardsHandOver(t *testing.T) {
	requireCluster(t)
	s := newShardedRun(t)
	for i := range shardCount {
		s.start(i, fmt.Sprintf("shard-%d-a", i))
		s.start(i, fmt.Sprintf("shard-%d-b", i))
	}
	s.expectLeadersAndLeases()
	s.createTasks()
	s.waitRunning()

	s.handOver("SIGKILL", func(p *cluster.Process) { p.Kill() })
	// As Kubernetes would: a new pod stands by in place of the killed one.
	standby := s.start(0, "shard-0-c")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := standby.proc.WaitFor(ctx, waiting) // its cache synced, it waits on the Lease
	s.g.Expect(err).NotTo(HaveOccurred())
	s.handOver("SIGTERM", func(p *cluster.Process) { s.g.Expect(p.Stop(15 * time.Second)).To(Succeed()) })

	s.g.Expect(s.agent.lapsedTasks()).To(BeEmpty(), "tasks whose lease lapsed at the agent")
	s.expectOutcomes()
	t.Run("DeletedTreeCancelsEveryDescendant", func(t *testing.T) { s.deleteTree(t, s.byShard[0][0]) })
	s.deleteAll()

	s.g.Expect(s.agent.duplicateSends()).To(BeEmpty(), "message ids sent more than once")
	s.g.Expect(s.agent.sendCount()).To(Equal(len(s.tasks)+treeSize), "one send per Delegation")
	for _, rep := range s.replicas {
		expectNoForbidden(t, rep.proc)
		if strings.Contains(rep.proc.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", rep.proc.Name(), cluster.Tail(rep.proc.Log(), 40))
		}
	}
}

// shardedRun is one installation of the chart with shards=3 and its
// operator processes, namespaces and tasks.
type shardedRun struct {
	t           *testing.T
	g           *WithT
	r           release
	agent       *recordingAgent
	deployments map[int]*appsv1.Deployment
	replicas    []*shardReplica
	byShard     map[int][]string // shard → its namespaces
	tasks       []*shardTask
}

// shardReplica is one operator process of a shard.
type shardReplica struct {
	shard int
	proc  *cluster.Process
}

type shardTask struct {
	shard      int
	ns, name   string
	remoteTask string
}

func newShardedRun(t *testing.T) *shardedRun {
	s := &shardedRun{t: t, g: NewWithT(t), deployments: map[int]*appsv1.Deployment{}, byShard: map[int][]string{}}
	runID := newRunID()
	s.r = installChart(t, "tether-shards", "tether-shards-"+runID, "shards=3", "replicasPerShard=2", "cancelTimeout=20s")
	s.agent = newRecordingAgent()
	t.Cleanup(s.agent.Close)
	for i := range shardCount {
		d := &appsv1.Deployment{}
		key := client.ObjectKey{Namespace: s.r.namespace, Name: fmt.Sprintf("%s-shard-%d", s.r.name, i)}
		s.g.Expect(kube.Get(context.Background(), key, d)).To(Succeed())
		s.deployments[i] = d
	}
	// Two namespaces per shard; realistic names spread over the hash space.
	for k := 0; len(s.byShard[0]) < 2 || len(s.byShard[1]) < 2 || len(s.byShard[2]) < 2; k++ {
		ns := fmt.Sprintf("tenant-%s-%d", runID, k)
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
	rep := &shardReplica{shard: i, proc: startOperatorOf(s.t, s.r, s.deployments[i], name, extra...)}
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
			newNamespace(s.t, ns)
			w := newWorkspace(s.t, ns)
			w.createAgent("agent", s.agent.URL())
			w.deleteDelegationsOnCleanup()
			for n := range tasksPerNS {
				d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("leased-%d", n)},
					Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.LocalRef{Name: "agent"},
						Message: &v1alpha1.Message{Text: "hold until released"},
						Lease:   &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: shardLeaseTTL}}}}
				s.g.Expect(kube.Create(context.Background(), d)).To(Succeed())
				s.tasks = append(s.tasks, &shardTask{shard: i, ns: ns, name: d.Name})
			}
		}
	}
}

func (s *shardedRun) waitRunning() {
	s.g.Eventually(func(g Gomega) {
		for _, tk := range s.tasks {
			if tk.remoteTask != "" {
				continue
			}
			d := s.delegation(g, tk)
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning), "%s/%s: %+v", tk.ns, tk.name, d.Status.Outcome)
			tk.remoteTask = d.Status.TaskID
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
	s.t.Logf("%d leased tasks running over %d shards", len(s.tasks), shardCount)
}

func (s *shardedRun) delegation(g Gomega, tk *shardTask) *v1alpha1.Delegation {
	d := &v1alpha1.Delegation{}
	g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: tk.ns, Name: tk.name}, d)).To(Succeed())
	return d
}

// handOver stops shard 0's leader the given way and checks the renewals
// around it: shard 0's standby renews every task before its ttl runs out,
// and the other shards keep their ttl/3 cadence.
func (s *shardedRun) handOver(how string, stop func(*cluster.Process)) {
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
				unrenewed = append(unrenewed, tk.ns+"/"+tk.name)
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
					"%s/%s (shard %d) went %s without a renewal around the %s", tk.ns, tk.name, tk.shard, gap, how)
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

// expectOutcomes lets every task finish and waits until each Delegation
// recorded its result.
func (s *shardedRun) expectOutcomes() {
	s.agent.releaseAll()
	s.g.Eventually(func(g Gomega) {
		for _, tk := range s.tasks {
			d := s.delegation(g, tk)
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s/%s: %+v", tk.ns, tk.name, d.Status.Outcome)
			g.Expect(d.Status.Result).NotTo(BeNil())
			g.Expect(d.Status.Result.Text).To(ContainSubstring("held and done"))
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
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
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.LocalRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "forever"}}}
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

// deleteAll deletes every Delegation while every shard has its leader
// (cleanups would stop the last started replica first).
func (s *shardedRun) deleteAll() {
	ctx := context.Background()
	for _, namespaces := range s.byShard {
		for _, ns := range namespaces {
			s.g.Expect(kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(ns))).To(Succeed())
		}
	}
	s.g.Eventually(func(g Gomega) {
		for _, namespaces := range s.byShard {
			for _, ns := range namespaces {
				list := &v1alpha1.DelegationList{}
				g.Expect(kube.List(ctx, list, client.InNamespace(ns))).To(Succeed())
				g.Expect(list.Items).To(BeEmpty(), "Delegations left in %s", ns)
			}
		}
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
}
