/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
	"github.com/tether-dev/tether/test/faults"
)

// shardInstall is one installation of the chart with shards, the operator
// processes started from its Deployments, and the recording agent every
// tenant namespace of it uses. The hand-over and the reshard tests share it.
type shardInstall struct {
	t     *testing.T
	g     *WithT
	runID string
	r     release
	agent *recordingAgent
	pods  []*pod
	// kubeconfig is how the operator processes reach the API server.
	kubeconfig string
}

func newShardInstall(t *testing.T, name string, values ...string) *shardInstall {
	s := &shardInstall{t: t, g: NewWithT(t), runID: newRunID(), agent: newRecordingAgent(), kubeconfig: testbed.Kubeconfig()}
	t.Cleanup(s.agent.Close)
	s.r = installChart(t, name, name+"-"+s.runID, append(values, "cancelTimeout=20s")...)
	return s
}

// failLeaseWrites sends the operator processes started from now on through
// a proxy that fails a share of their Lease writes (faults.APIProxy).
func (s *shardInstall) failLeaseWrites(opts faults.LeaseOptions) *faults.APIProxy {
	p, err := faults.NewAPIProxy(testbed.Config(), opts)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.t.Cleanup(p.Close)
	s.kubeconfig = filepath.Join(s.t.TempDir(), "through-proxy.kubeconfig")
	s.g.Expect(p.WriteKubeconfig(s.kubeconfig)).To(Succeed())
	return p
}

// start runs one more pod of shard i's Deployment (read anew, so a helm
// upgrade's Deployment is what starts).
func (s *shardInstall) start(i int, name string, extra ...string) *pod {
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: s.r.namespace, Name: fmt.Sprintf("%s-shard-%d", s.r.name, i)}
	s.g.Expect(kube.Get(context.Background(), key, d)).To(Succeed())
	p, err := startPod(s.t, name, operatorOf(s.t, s.r, d, name, s.kubeconfig, extra...))
	s.g.Expect(err).NotTo(HaveOccurred())
	s.t.Cleanup(func() {
		if err := p.Stop(15 * time.Second); err != nil {
			s.t.Errorf("stopping %s: %v", name, err)
		}
		if s.t.Failed() {
			s.t.Logf("%s log (last lines):\n%s", name, cluster.Tail(p.Log(), 60))
		}
	})
	s.pods = append(s.pods, p)
	return p
}

// processes are every operator process the install ran, restarts included.
func (s *shardInstall) processes() []*cluster.Process {
	var all []*cluster.Process
	for _, p := range s.pods {
		all = append(all, p.processes()...)
	}
	return all
}

// tenant makes a namespace with an Agent "agent" at the recording agent,
// read back every poll; its Delegations are deleted at the end.
func (s *shardInstall) tenant(ns string, poll time.Duration) {
	newNamespace(s.t, ns)
	w := newWorkspace(s.t, ns)
	w.createAgentPolled("agent", s.agent.URL(), poll)
	w.deleteDelegationsOnCleanup()
}

// tenantOf makes a namespace of shard i of n (named prefix-<run>-<k>) with
// an Agent "agent" at url, read back every poll, and returns its name.
func (s *shardInstall) tenantOf(i, n int, prefix, url string, poll time.Duration) string {
	var ns string
	for k := 0; ns == ""; k++ {
		if c := fmt.Sprintf("%s-%s-%d", prefix, s.runID, k); shard.Of(c, n).Index == i {
			ns = c
		}
	}
	newNamespace(s.t, ns)
	newWorkspace(s.t, ns).createAgentPolled("agent", url, poll)
	return ns
}

// createAll creates the Delegations.
func (s *shardInstall) createAll(ds []*v1alpha1.Delegation) {
	for _, d := range ds {
		s.g.Expect(kube.Create(context.Background(), d)).To(Succeed())
	}
}

// settled waits until every Delegation of ns has ended (within limit) and
// tallies them against the tasks the agent ran: no task run twice, none
// whose outcome was lost, nothing given up, everything within its timeout.
func (s *shardInstall) expectSettledClean(ns string, agent *faults.Agent, n int, limit time.Duration) faults.Tally {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	ds, err := faults.Settled(ctx, kube, ns)
	tally := faults.Count(ds, agent.Tasks())
	s.g.Expect(err).NotTo(HaveOccurred(), "waiting until every Delegation settled: %s", tally)
	s.g.Expect(tally.Delegations).To(Equal(n))
	s.g.Expect(tally.Clean()).To(BeTrue(), "%s: %s", tally, strings.Join(tally.Examples, "; "))
	return tally
}

// expectNoPanic fails when an operator process of the install panicked.
func (s *shardInstall) expectNoPanic() {
	for _, p := range s.processes() {
		if strings.Contains(p.Log(), "panic") {
			s.t.Errorf("%s panicked:\n%s", p.Name(), cluster.Tail(p.Log(), 40))
		}
	}
}

// createLeased creates n leased Delegations prefix-0… in ns that run until
// the agent releases them.
func (s *shardInstall) createLeased(ns, prefix string, n int, ttl time.Duration) []client.ObjectKey {
	keys := make([]client.ObjectKey, 0, n)
	for k := range n {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, k)},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"},
				Message: &v1alpha1.Message{Text: "hold until released"},
				Lease:   &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}}}
		s.g.Expect(kube.Create(context.Background(), d)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(d))
	}
	return keys
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

// expectSucceeded releases the agent's tasks and waits until each
// Delegation recorded the agent's result.
func (s *shardInstall) expectSucceeded(tasks []client.ObjectKey) {
	s.agent.releaseAll()
	s.g.Eventually(func(g Gomega) {
		for _, key := range tasks {
			d := &v1alpha1.Delegation{}
			g.Expect(kube.Get(context.Background(), key, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %+v", key, d.Status.Outcome)
			g.Expect(d.Status.Result).NotTo(BeNil())
			g.Expect(d.Status.Result.Text).To(ContainSubstring("held and done"))
		}
	}).WithTimeout(2 * timeout).WithPolling(time.Second).Should(Succeed())
}

// deleteAll deletes every Delegation of the namespaces while the shards
// still have their leaders (cleanups would stop the last started process
// first), and waits until they are gone.
func (s *shardInstall) deleteAll(namespaces []string) {
	ctx := context.Background()
	for _, ns := range namespaces {
		s.g.Expect(kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(ns))).To(Succeed())
	}
	s.g.Eventually(func(g Gomega) {
		for _, ns := range namespaces {
			list := &v1alpha1.DelegationList{}
			g.Expect(kube.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "Delegations left in %s", ns)
		}
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
}

// watchLeaseOverlaps watches the shard Leases of the install's namespace
// and notes, at every change, whether two Leases held by shards of
// different counts cover overlapping ranges. stop ends the watch and
// returns what it saw.
func (s *shardInstall) watchLeaseOverlaps() (stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kube.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(s.r.namespace), client.HasLabels{shard.LabelShard})
	s.g.Expect(err).NotTo(HaveOccurred())
	var overlaps []string
	var done sync.WaitGroup
	done.Go(func() {
		leases := map[string]*coordinationv1.Lease{}
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(leases, l.Name)
			} else {
				leases[l.Name] = l
			}
			if o := overlappingLeases(leases, time.Now()); o != "" {
				overlaps = append(overlaps, o)
			}
		}
	})
	return func() []string {
		cancel()
		w.Stop()
		done.Wait()
		return overlaps
	}
}

// overlappingLeases names two held shard Leases of different counts whose
// ranges overlap, or is empty.
func overlappingLeases(leases map[string]*coordinationv1.Lease, now time.Time) string {
	type heldShard struct {
		shard.Shard
		name, holder string
	}
	var held []heldShard
	for _, l := range leases {
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
