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
	shardCount    = 3
	tasksPerNS    = 12 // two namespaces per shard: 72 leased tasks
	shardLeaseTTL = 15 * time.Second
)

// shardReplica is one operator process of a shard.
type shardReplica struct {
	shard int
	proc  *cluster.Process
}

var leading = regexp.MustCompile(`"leading the shard"`)

// Three shards of two replicas each, as the chart renders them, on an API
// server with ShardedListAndWatch (shards 0 and 1 let it filter; shard 2 is
// told to filter on its own). Shard 0's leader is SIGKILLed, then its
// successor SIGTERMed, with leased tasks (ttl 15 s) in flight: every task of
// shard 0 is renewed by the standby before its lease runs out, the other
// shards' renewals go on without a gap, nothing is sent twice and every
// task's outcome is recorded. Then a tree is deleted and every descendant's
// task is cancelled at the agent.
func TestShardsHandOver(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	runID := newRunID()
	r := installChart(t, "tether-shards", "tether-shards-"+runID, "shards=3", "replicasPerShard=2", "cancelTimeout=20s")
	agent := newRecordingAgent()
	t.Cleanup(agent.Close)

	deployments := map[int]*appsv1.Deployment{}
	for i := range shardCount {
		d := &appsv1.Deployment{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: fmt.Sprintf("%s-shard-%d", r.name, i)}, d)).To(Succeed())
		deployments[i] = d
	}
	extra := func(i int) []string {
		if i == 2 {
			return []string{"--shard-filtering=client"}
		}
		return nil
	}
	var replicas []*shardReplica
	start := func(i int, name string) *shardReplica {
		rep := &shardReplica{shard: i, proc: startOperatorOf(t, r, deployments[i], name, extra(i)...)}
		replicas = append(replicas, rep)
		return rep
	}
	for i := range shardCount {
		start(i, fmt.Sprintf("shard-%d-a", i))
		start(i, fmt.Sprintf("shard-%d-b", i))
	}
	leaderOf := func(i int) *shardReplica {
		var found *shardReplica
		g.Eventually(func(g Gomega) {
			found = nil
			for _, rep := range replicas {
				if rep.shard == i && !rep.proc.Exited() && leading.MatchString(rep.proc.Log()) {
					g.Expect(found).To(BeNil(), "two leaders of shard %d", i)
					found = rep
				}
			}
			g.Expect(found).NotTo(BeNil(), "no leader of shard %d", i)
		}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
		return found
	}
	for i := range shardCount {
		leader := leaderOf(i)
		how := "the API server filters"
		if i == 2 {
			how = "filtered before the cache"
		}
		g.Expect(leader.proc.Log()).To(ContainSubstring(how), "shard %d", i)
		lease := &coordinationv1.Lease{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: fmt.Sprintf("tether-shard-%d", i)}, lease)).To(Succeed())
		g.Expect(lease.Labels).To(HaveKeyWithValue(shard.LabelShard, fmt.Sprint(i)))
		g.Expect(lease.Annotations).To(HaveKeyWithValue(shard.AnnotationShards, "3"))
	}

	// Two namespaces per shard, each with its Agent and leased tasks.
	byShard := map[int][]string{}
	for k := 0; len(byShard[0]) < 2 || len(byShard[1]) < 2 || len(byShard[2]) < 2; k++ {
		ns := fmt.Sprintf("tenant-%s-%d", runID, k)
		if i := shard.Of(ns, shardCount).Index; len(byShard[i]) < 2 {
			byShard[i] = append(byShard[i], ns)
		}
	}
	type task struct {
		shard  int
		ns, id string
	}
	var tasks []*task
	for i := range shardCount {
		for _, ns := range byShard[i] {
			newNamespace(t, ns)
			w := newWorkspace(t, ns)
			w.createAgent("agent", agent.URL())
			w.deleteDelegationsOnCleanup()
			for n := range tasksPerNS {
				d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("leased-%d", n)},
					Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.LocalRef{Name: "agent"},
						Message: &v1alpha1.Message{Text: "hold until released"},
						Lease:   &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: shardLeaseTTL}}}}
				g.Expect(kube.Create(ctx, d)).To(Succeed())
				tasks = append(tasks, &task{shard: i, ns: ns, id: d.Name})
			}
		}
	}
	taskIDs := map[*task]string{}
	g.Eventually(func(g Gomega) {
		for _, tk := range tasks {
			if taskIDs[tk] != "" {
				continue
			}
			d := &v1alpha1.Delegation{}
			g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: tk.ns, Name: tk.id}, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning), "%s/%s: %+v", tk.ns, tk.id, d.Status.Outcome)
			taskIDs[tk] = d.Status.TaskID
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
	t.Logf("%d leased tasks running over %d shards", len(tasks), shardCount)
	// handOver stops shard 0's leader the given way and checks the renewals
	// around it.
	handOver := func(how string, stop func(*cluster.Process)) {
		old := leaderOf(0)
		// Every task has a renewal cadence before the stop.
		g.Eventually(func() int {
			n := 0
			for _, tk := range tasks {
				if len(agent.renewalsOf(taskIDs[tk])) >= 2 {
					n++
				}
			}
			return n
		}).WithTimeout(2*shardLeaseTTL).WithPolling(time.Second).Should(Equal(len(tasks)), "every task renewed twice before the %s", how)
		at := time.Now()
		t.Logf("%s: %s of shard 0", how, old.proc.Name())
		stop(old.proc)
		stopped := time.Now() // every renewal from here on is a standby's
		successor := leaderOf(0)
		g.Expect(successor).NotTo(BeIdenticalTo(old))
		// Every task of shard 0 renewed after the stop; others kept going.
		g.Eventually(func() []string {
			var waiting []string
			for _, tk := range tasks {
				if !slices.ContainsFunc(agent.renewalsOf(taskIDs[tk]), func(r time.Time) bool { return r.After(stopped) }) {
					waiting = append(waiting, tk.ns+"/"+tk.id)
				}
			}
			return waiting
		}).WithTimeout(3 * shardLeaseTTL).WithPolling(500 * time.Millisecond).Should(BeEmpty())
		var firsts []time.Duration
		for _, tk := range tasks {
			renewals := agent.renewalsOf(taskIDs[tk])
			// The longest time without a renewal around the stop must stay
			// under the ttl (the agent would drop the task), and, on the
			// shards that kept their leader, near the ttl/3 cadence.
			limit := shardLeaseTTL
			if tk.shard != 0 {
				limit = 2 * shardLeaseTTL / 3
			}
			for k := 1; k < len(renewals); k++ {
				if renewals[k].After(at.Add(-shardLeaseTTL)) {
					g.Expect(renewals[k].Sub(renewals[k-1])).To(BeNumerically("<", limit),
						"%s/%s (shard %d) went %s without a renewal around the %s", tk.ns, tk.id, tk.shard,
						renewals[k].Sub(renewals[k-1]), how)
				}
			}
			if tk.shard == 0 {
				k := slices.IndexFunc(renewals, func(r time.Time) bool { return r.After(stopped) })
				firsts = append(firsts, renewals[k].Sub(at))
			}
		}
		slices.Sort(firsts)
		t.Logf("%s: shard 0's %d tasks first renewed by the standby %s (median) and %s (last) after the stop; lease duration %s",
			how, len(firsts), firsts[len(firsts)/2].Round(10*time.Millisecond), firsts[len(firsts)-1].Round(10*time.Millisecond),
			shard.DefaultLeaseDuration)
	}

	handOver("SIGKILL", func(p *cluster.Process) { p.Kill() })
	// As Kubernetes would: a new pod stands by in place of the killed one.
	standby := start(0, "shard-0-c")
	// A standby: its cache synced, it waits on the Lease.
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := standby.proc.WaitFor(waitCtx, regexp.MustCompile(`Attempting to acquire leader lease`))
	g.Expect(err).NotTo(HaveOccurred())
	handOver("SIGTERM", func(p *cluster.Process) { g.Expect(p.Stop(15 * time.Second)).To(Succeed()) })

	g.Expect(agent.lapsedTasks()).To(BeEmpty(), "tasks whose lease lapsed at the agent")
	agent.releaseAll()
	g.Eventually(func(g Gomega) {
		for _, tk := range tasks {
			d := &v1alpha1.Delegation{}
			g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: tk.ns, Name: tk.id}, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s/%s: %+v", tk.ns, tk.id, d.Status.Outcome)
			g.Expect(d.Status.Result).NotTo(BeNil())
			g.Expect(d.Status.Result.Text).To(ContainSubstring("held and done"))
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())

	t.Run("DeletedTreeCancelsEveryDescendant", func(t *testing.T) {
		w := newWorkspace(t, byShard[0][0])
		w.deleteDelegationsOnCleanup()
		names := []string{"root"}
		create := func(name, parent string) {
			d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
				Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.LocalRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "forever"}}}
			if parent != "" {
				d.Spec.ParentRef = &v1alpha1.LocalRef{Name: parent}
				names = append(names, name)
			}
			w.g.Expect(kube.Create(ctx, d)).To(Succeed())
		}
		create("root", "")
		w.waitPhase("root", v1alpha1.PhaseRunning)
		for c := range 3 {
			mid := fmt.Sprintf("mid-%d", c)
			create(mid, "root")
			w.waitPhase(mid, v1alpha1.PhaseRunning)
			for l := range 2 {
				create(fmt.Sprintf("leaf-%d-%d", c, l), mid)
			}
		}
		ids := map[string]string{}
		for _, name := range names {
			ids[name] = w.waitPhase(name, v1alpha1.PhaseRunning).Status.TaskID
		}
		w.g.Expect(kube.Delete(ctx, w.get("root"))).To(Succeed())
		w.g.Eventually(func() []string {
			var open []string
			for _, name := range names {
				if !agent.cancelled(ids[name]) {
					open = append(open, name)
				}
			}
			return open
		}).WithTimeout(timeout).WithPolling(tick).Should(BeEmpty(), "tasks of the deleted tree never got CancelTask")
		for _, name := range names {
			w.waitGone(name)
		}
	})

	// Deleted while every shard has its leader (cleanups stop the last
	// started replica first).
	for _, namespaces := range byShard {
		for _, ns := range namespaces {
			g.Expect(kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(ns))).To(Succeed())
		}
	}
	g.Eventually(func(g Gomega) {
		for _, namespaces := range byShard {
			for _, ns := range namespaces {
				list := &v1alpha1.DelegationList{}
				g.Expect(kube.List(ctx, list, client.InNamespace(ns))).To(Succeed())
				g.Expect(list.Items).To(BeEmpty(), "Delegations left in %s", ns)
			}
		}
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())

	g.Expect(agent.duplicateSends()).To(BeEmpty(), "message ids sent more than once")
	g.Expect(agent.sendCount()).To(Equal(len(tasks)+10), "one send per Delegation")
	for _, rep := range replicas {
		expectNoForbidden(t, rep.proc)
		if strings.Contains(rep.proc.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", rep.proc.Name(), cluster.Tail(rep.proc.Log(), 40))
		}
	}
}
