/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// An Agent that accepts every call and never answers (requestTimeout 10m)
// fills only its own pool: another Agent's lease renewals stay on time and
// its new tasks are sent.
func TestHungAgentDoesNotDelayAnotherAgent(t *testing.T) {
	e := setup(t)
	hung := newTestAgent()
	t.Cleanup(hung.Close)
	e.createAgent("hung", hung.URL(), func(a *v1alpha1.Agent) {
		a.Spec.RequestTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	})
	e.waitAgentReady("hung")
	hung.hang.Store(true)
	for i := range 12 {
		e.create(e.kitTask(fmt.Sprintf("stuck-%d", i), "hung", "wait"))
	}
	// Its pool (8 calls) is full; the rest wait and say so.
	e.g.Eventually(func() int { return len(hung.Calls("SendMessage")) }, eventually, tick).Should(Equal(8))
	e.g.Eventually(func() string {
		for i := range 12 {
			if o := e.get(fmt.Sprintf("stuck-%d", i)).Status.Outcome; o != nil && o.Reason == delegation.ReasonAgentBusy {
				return o.Reason
			}
		}
		return ""
	}, eventually, tick).Should(Equal(delegation.ReasonAgentBusy))

	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL(), pollEvery(10*time.Second))
	const ttl = 3 * time.Second
	e.create(e.kitTask("leased", "kit", "forever delay=1h", withLease(ttl)))
	id := e.waitLeased("leased").Status.TaskID
	start := time.Now()
	time.Sleep(4 * time.Second)
	renewals := ka.Renewals(id)
	var gaps []time.Duration
	last := start
	for _, c := range renewals {
		if c.At.After(start) {
			gaps = append(gaps, c.At.Sub(last).Round(time.Millisecond))
			last = c.At
		}
	}
	gaps = append(gaps, time.Since(last).Round(time.Millisecond))
	t.Logf("renewals of the healthy agent's task while another agent hangs: gaps %v", gaps)
	for _, gap := range gaps {
		e.g.Expect(gap).To(BeNumerically("<=", ttl/3+time.Second), "renewed every ttl/3 (+1s)")
	}

	// A new task to the healthy agents is sent and finishes.
	e.create(e.task("fresh", "hello"))
	e.g.Expect(e.waitPhase("fresh", v1alpha1.PhaseSucceeded).Status.Result.Text).To(Equal("echo: hello"))
	e.g.Expect(len(hung.Calls("SendMessage"))).To(Equal(8), "the hung agent's pool stayed bounded")
}

// Deleting a root dispatches CancelTask for every child from the cache at
// once: every child's task is cancelled while no child has even been asked
// to go (the garbage collector, pacing itself at 20 QPS, comes later).
func TestDeletedRootCancelsEveryChildBeforeAnyChildIsDeleted(t *testing.T) {
	e := setup(t)
	const n = 200
	e.create(e.task("root", "wait"))
	e.waitRunning("root")
	for i := range n {
		e.create(e.task(fmt.Sprintf("child-%03d", i), "wait", childOf("root")))
	}
	e.g.Eventually(func() int { return len(e.agent.Calls("SendMessage")) }, 2*eventually, tick).Should(Equal(n + 1))
	e.g.Eventually(func(g Gomega) {
		var list v1alpha1.DelegationList
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
		for _, d := range list.Items {
			g.Expect(d.Status.TaskID).NotTo(BeEmpty(), d.Name)
		}
	}, 2*eventually, tick).Should(Succeed())
	ids := map[string]string{}
	var list v1alpha1.DelegationList
	e.g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
	for _, d := range list.Items {
		ids[d.Status.TaskID] = d.Name
	}

	deleted := time.Now()
	root := e.get("root")
	e.g.Expect(k8sClient.Delete(context.Background(), root, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	e.g.Eventually(func() int {
		cancelled := map[string]bool{}
		for _, c := range e.agent.Calls("CancelTask") {
			if name, ok := ids[c.TaskID]; ok {
				cancelled[name] = true
			}
		}
		return len(cancelled)
	}, 2*eventually, tick).Should(Equal(n + 1))
	t.Logf("CancelTask received for the root and %d children %v after the root's deletion", n, time.Since(deleted).Round(time.Millisecond))
	e.g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
	children := 0
	for _, d := range list.Items {
		if d.Name != "root" {
			children++
			e.g.Expect(d.DeletionTimestamp).To(BeNil(), "nothing deleted %s yet", d.Name)
		}
	}
	e.g.Expect(children).To(Equal(n), "every child object is still there")
	// The children record the cascade at the client's rate.
	e.g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(n), "the root let go once its own task was cancelled")
		for _, d := range list.Items {
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseCanceled), d.Name)
			g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonParentDeleted), d.Name)
		}
	}, 2*eventually, tick).Should(Succeed())
}

// spec.maxConcurrentTasks: the tasks over it wait (AgentAtCapacity) and
// start in creation order as running ones settle.
func TestMaxConcurrentTasksQueuesAndReleasesInOrder(t *testing.T) {
	e := setup(t)
	e.createAgent("capped", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.MaxConcurrentTasks = ptr.To[int32](2) })
	e.waitAgentReady("capped")
	names := []string{"a1", "a2", "a3", "a4", "a5"}
	for _, name := range names {
		e.create(e.kitTask(name, "capped", "wait "+name))
		time.Sleep(20 * time.Millisecond)
	}
	sentTexts := func() []string {
		calls := e.agent.Calls("SendMessage")
		out := make([]string, 0, len(calls))
		for _, c := range calls {
			out = append(out, c.Text)
		}
		return out
	}
	e.waitRunning("a1")
	e.waitRunning("a2")
	for _, name := range names[2:] {
		e.waitReason(name, v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity)
	}
	e.g.Consistently(sentTexts, time.Second, tick).Should(Equal([]string{"wait a1", "wait a2"}))

	e.update("a2", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitRunning("a3")
	e.g.Consistently(sentTexts, time.Second, tick).Should(Equal([]string{"wait a1", "wait a2", "wait a3"}))
	e.update("a1", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitRunning("a4")
	e.g.Expect(e.get("a5").Status.Phase).To(Equal(v1alpha1.PhasePending))
	e.g.Expect(sentTexts()).To(Equal([]string{"wait a1", "wait a2", "wait a3", "wait a4"}))
}

// A plain task costs three API writes from create to Succeeded: the
// finalizer with the send marker, Running, Succeeded.
func TestPlainTaskCostsThreeWrites(t *testing.T) {
	e := setup(t)
	e.waitAgentReady("agent")
	w, err := k8sWatcher().Watch(context.Background(), &v1alpha1.DelegationList{}, client.InNamespace(e.ns))
	e.g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	e.create(e.task("plain", "slow"))
	e.waitPhase("plain", v1alpha1.PhaseSucceeded)
	writes := 0
	e.g.Consistently(func() int {
		for {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Modified {
					writes++
					d := ev.Object.(*v1alpha1.Delegation)
					t.Logf("write %d: phase %q remote %q outcome %+v conditions %d sendStarted %v", writes, d.Status.Phase, d.Status.RemoteState, d.Status.Outcome, len(d.Status.Conditions), d.Status.SendStarted)
				}
			default:
				return writes
			}
		}
	}, 2*time.Second, tick).Should(BeNumerically("<=", 3))
	t.Logf("API writes from create to Succeeded: %d", writes)
	e.g.Expect(writes).To(BeNumerically(">=", 2))
}

func k8sWatcher() client.WithWatch {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	return c
}

// What the operator keeps per Delegation (the cascade's record, the send
// records, the answers and the followed tasks) goes with the Delegation: a
// tree created, cascaded and deleted leaves nothing behind.
func TestEveryMapKeyedByDelegationIsPrunedWhenItGoes(t *testing.T) {
	var r *DelegationReconciler
	e := setupWithReconciler(t, testOptions(), func(dr *DelegationReconciler) { r = dr })
	e.create(e.task("root", "wait"))
	tasks := make([]string, 0, 4)
	tasks = append(tasks, e.waitRunning("root").Status.TaskID)
	names := make([]string, 0, 4)
	names = append(names, "root")
	for i := range 3 {
		name := fmt.Sprintf("child-%d", i)
		names = append(names, name)
		e.create(e.task(name, "wait", childOf("root")))
		tasks = append(tasks, e.waitRunning(name).Status.TaskID)
	}
	for _, name := range names { // envtest runs no garbage collector
		e.g.Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), e.get(name)))).To(Succeed())
	}
	e.g.Eventually(func() int {
		var list v1alpha1.DelegationList
		e.g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
		return len(list.Items)
	}, eventually, tick).Should(BeZero())
	for _, id := range tasks {
		e.g.Expect(e.agent.Cancelled(id)).To(BeTrue(), "task %s was cancelled", id)
	}
	e.g.Eventually(func(g Gomega) {
		g.Expect(r.memory.cascaded.size()).To(BeZero(), "the cascade's records")
		for _, name := range names {
			key := types.NamespacedName{Namespace: e.ns, Name: name}
			_, sent := r.Calls.SendRecord(key)
			g.Expect(sent).To(BeFalse(), name)
			g.Expect(r.Scheduler.Tracked(key)).To(BeFalse(), name)
			_, handled := r.memory.handled.Load(key)
			g.Expect(handled).To(BeFalse(), name)
			for _, kind := range []agentio.Kind{agentio.KindStart, agentio.KindGet, agentio.KindCancel, agentio.KindReply} {
				g.Expect(r.Calls.Has(agentio.Key{Delegation: key, Kind: kind})).To(BeFalse(), name+"/"+string(kind))
			}
		}
	}, eventually, tick).Should(Succeed())
}

// blackHole accepts connections and never answers: a card read at it waits
// for its whole deadline.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// Twelve Agents of one namespace point at a server that accepts connections
// and never answers. Their card reads hold only their own Agents' pools and
// their namespace's share of the card reads' places: under eight places for
// card reads (which the twelve would otherwise fill), another namespace's
// new Agent is Ready within 5 s, and its Delegation runs.
func TestBlackHoleAgentsDoNotDelayAnotherNamespacesAgent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	hungNS, otherNS := newNamespace(t), newNamespace(t)
	var calls *agentio.Dispatcher
	startOperatorIn(t, cfg, []string{hungNS, otherNS}, testOptions(), func(r *DelegationReconciler) {
		r.Calls.SetMemoryLimit(43<<20, 1<<20) // 32 call places, 8 of them for card reads
		calls = r.Calls
	})
	hole := blackHole(t)
	for i := range 12 {
		hung := &env{t: t, g: g, ns: hungNS}
		hung.createAgent(fmt.Sprintf("hole-%d", i), hole, func(a *v1alpha1.Agent) {
			a.Spec.RequestTimeout = &metav1.Duration{Duration: 10 * time.Minute}
		})
	}
	// Every black-hole card read is on its way before the other tenant comes.
	g.Eventually(func(g Gomega) {
		var list v1alpha1.AgentList
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(hungNS))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(12))
		for _, a := range list.Items {
			g.Expect(a.Finalizers).NotTo(BeEmpty(), a.Name)
		}
	}, eventually, tick).Should(Succeed())
	time.Sleep(time.Second)
	running := 0
	for _, p := range calls.Stats() {
		running += p.Running
	}
	g.Expect(running).To(Equal(2), "the hung namespace runs its share of card reads (a quarter of 8 places), the rest wait")

	other := &env{t: t, g: g, ns: otherNS, agent: newTestAgent()}
	t.Cleanup(other.agent.Close)
	created := time.Now()
	other.createAgent("agent", other.agent.URL())
	g.Eventually(func(g Gomega) {
		a := &v1alpha1.Agent{}
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: otherNS, Name: "agent"}, a)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")).To(BeTrue())
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed(), "Ready within 5 s")
	t.Logf("the other namespace's Agent was Ready %s after it was created", time.Since(created).Round(time.Millisecond))
	other.create(other.task("runs", "hello"))
	d := other.waitPhase("runs", v1alpha1.PhaseSucceeded)
	g.Expect(d.Status.Result.Text).To(Equal("echo: hello"))

	var list v1alpha1.AgentList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(hungNS))).To(Succeed())
	for _, a := range list.Items {
		g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")).To(BeFalse(), "%s never answered", a.Name)
	}
}
