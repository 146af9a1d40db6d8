/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// settle measures how late a task's end shows: from the agent sending the
// terminal event to a watch seeing the Delegation Succeeded, for an agent
// that streams, one that is polled and one that pushes, beside a plain
// informer's watch latency for status writes of a trivial object. A row
// without a target shows what the settle's one status write costs alone:
// the bench writes the status of the streamed Delegations once they settled.
func (e *env) settle() []row {
	floor := e.watchFloor(max(e.sz.SettleN, 20))
	floorOf := fmt.Sprintf("plain informer: status write → watch event (%d writes)", len(floor))
	const polledEvery, unpolled = time.Second, 30 * time.Second
	kinds := []struct {
		name   string
		kind   agentKind
		poll   time.Duration
		target string
		met    func(row) bool
	}{
		// The streaming and pushing agents are polled rarely, so a task
		// whose end was not streamed or pushed shows it by a late number.
		{"streaming agent", streaming, unpolled, "≤ 2× floor", ratioAtMost(2)},
		{"polled agent (every 1 s)", polled, polledEvery, "≤ poll interval", valueAtMost(millis(polledEvery))},
		{"pushing agent", pushing, unpolled, "≤ 2× floor", ratioAtMost(2)},
	}
	rows := make([]row, 0, 2*len(kinds)+1)
	for _, k := range kinds {
		lat, writes := e.settleAt(k.kind, k.poll, k.kind == streaming)
		if len(writes) > 0 {
			rows = append(rows, row{Name: "status write of a settled Delegation → watch event, p50", Unit: "ms",
				Value: millis(percentile(writes, 0.5)), Floor: millis(percentile(floor, 0.5)), FloorOf: floorOf})
		}
		rows = append(rows,
			row{Name: "settle p50, " + k.name, Unit: "ms", Value: millis(percentile(lat, 0.5)), Floor: millis(percentile(floor, 0.5)),
				FloorOf: floorOf, Target: k.target, Met: k.met},
			row{Name: "settle p99, " + k.name, Unit: "ms", Value: millis(percentile(lat, 0.99)), Floor: millis(percentile(floor, 0.99)),
				FloorOf: floorOf},
		)
	}
	return rows
}

// settleAt runs SettleN tasks at an agent of a kind, created a few at a
// time so they do not queue behind each other, and returns for each the
// time from its terminal event at the agent to Succeeded at the watch. A
// task whose end was never seen counts as Wait. With writeFloor, it then
// times a plain client's status write of each settled Delegation.
func (e *env) settleAt(kind agentKind, poll time.Duration, writeFloor bool) (lat, writes []time.Duration) {
	t, n := e.t, e.sz.SettleN
	ag := newBenchAgentOf(kind, e.sz.SettleRun)
	defer ag.Close()
	ns := e.tenant("settle", ag.URL(), pollEvery(poll))
	tick := time.NewTicker(50 * time.Millisecond)
	for i := range n {
		<-tick.C
		must(t, e.kube.Create(context.Background(), delegation(ns, fmt.Sprintf("s-%04d", i), "settle")))
	}
	tick.Stop()
	succeeded := func() int { return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) }
	if !e.tryUntil(e.sz.Wait, func() bool { return succeeded() == n }) {
		t.Logf("settle: only %d of %d Succeeded within %s; the rest count as %s", succeeded(), n, e.sz.Wait, e.sz.Wait)
	}
	lat = make([]time.Duration, 0, n)
	names := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("s-%04d", i)
		names[i] = name
		ended, ok := ag.endedAt(name)
		seen, shown := e.seen.reachedAt(ns, name, v1alpha1.PhaseSucceeded)
		if !ok || !shown {
			lat = append(lat, e.sz.Wait)
			continue
		}
		lat = append(lat, seen.Sub(ended))
	}
	if writeFloor && succeeded() == n {
		writes = e.delegationWriteFloor(ns, names)
	}
	e.deleteAll(ns)
	return lat, writes
}

// watchFloor writes the status of n trivial objects one after another and
// returns, for each, the time from the write to a plain informer's update
// event.
func (e *env) watchFloor(n int) []time.Duration {
	ctx := context.Background()
	ns := e.namespace("watch")
	items := make([]*unstructured.Unstructured, n)
	names := make([]string, n)
	for i := range items {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(benchItem)
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("watch-%04d", i))
		must(e.t, e.kube.Create(ctx, u))
		items[i], names[i] = u, u.GetName()
	}
	done := func(u *unstructured.Unstructured) bool {
		done, _, _ := unstructured.NestedBool(u.Object, "status", "done")
		return done
	}
	out := e.statusWriteLatency(ns, benchItem, names, done, func(i int) error {
		items[i].Object["status"] = map[string]any{"done": true}
		return e.kube.Status().Update(ctx, items[i])
	})
	for _, u := range items {
		must(e.t, client.IgnoreNotFound(e.kube.Delete(ctx, u)))
	}
	return out
}

// delegationWriteFloor writes the status of the settled Delegations named
// one after another, a merge patch as the operator writes, and returns for
// each the time from the write to a plain informer's update event: what the
// settle's one status write costs without the operator.
func (e *env) delegationWriteFloor(ns string, names []string) []time.Duration {
	const note = "written by the bench"
	done := func(u *unstructured.Unstructured) bool {
		msg, _, _ := unstructured.NestedString(u.Object, "status", "outcome", "message")
		return msg == note
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"outcome":{"message":"`+note+`"}}}`))
	return e.statusWriteLatency(ns, v1alpha1.GroupVersion.WithKind("Delegation"), names, done, func(i int) error {
		return e.kube.Status().Patch(context.Background(), &v1alpha1.Delegation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]}}, patch)
	})
}

// statusWriteLatency makes write(i) for each named object of kind gvk in
// ns, 20 ms apart, and returns for each the time from the write to a plain
// informer's first update event that shows it done.
func (e *env) statusWriteLatency(ns string, gvk schema.GroupVersionKind, names []string,
	done func(*unstructured.Unstructured) bool, write func(i int) error) []time.Duration {
	t, n := e.t, len(names)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c, err := cache.New(e.config, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	must(t, err)
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(gvk)
	inf, err := c.GetInformer(ctx, probe)
	must(t, err)
	var (
		mu    sync.Mutex
		added int
		seen  = map[string]time.Time{}
	)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { mu.Lock(); added++; mu.Unlock() },
		UpdateFunc: func(_, o any) {
			now := time.Now()
			u, ok := o.(*unstructured.Unstructured)
			if !ok || !done(u) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if _, ok := seen[u.GetName()]; !ok {
				seen[u.GetName()] = now
			}
		},
	})
	must(t, err)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the floor's informer did not sync")
	}
	e.waitUntil("the floor's informer sees its objects", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return added >= n })
	wrote := make([]time.Time, n)
	for i := range names {
		wrote[i] = time.Now()
		must(t, write(i))
		time.Sleep(20 * time.Millisecond) // one write at a time, as tasks end
	}
	e.waitUntil("the floor's informer sees every status write", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == n })
	out := make([]time.Duration, n)
	for i, name := range names {
		out[i] = seen[name].Sub(wrote[i])
	}
	return out
}

// leak reads the operator's RSS and live heap before and after LeakN
// Delegations were created, settled and deleted. The live heap is read
// without the Events client-go's broadcaster keeps for 6 to 12 minutes (see
// heapReading); at full size the RSS is read again until it is back within
// 10% or that window has passed, since the runtime returns freed memory
// to the system only gradually.
func (e *env) leak() []row {
	t, n := e.t, e.sz.LeakN
	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant("leak", ag.URL(), pollEvery(time.Second))
	// A warm-up round first, as in the smoke's heap check: what the
	// operator allocates and pages in once (the Agent's client and pool,
	// the code of a task's whole path) belongs to the floor, not to the
	// churn.
	if !e.churn(ns, "warm", 50) {
		t.Logf("leak: the warm-up Delegations did not all settle")
	}
	// The Go runtime hands freed memory back to the system over time; both
	// readings are taken after the same quiet spell.
	quiet := 2 * time.Second
	if e.sz.Full {
		quiet = 30 * time.Second
	}
	time.Sleep(quiet)
	before, heapBefore := e.usage(e.operator), e.heap()
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = delegation(ns, fmt.Sprintf("k-%05d", i), "quick")
	}
	e.createAll(objs)
	succeeded := func() int { return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) }
	if !e.tryUntil(e.sz.Wait, func() bool { return succeeded() == n }) {
		t.Logf("leak: only %d of %d Succeeded within %s", succeeded(), n, e.sz.Wait)
	}
	peak, heapPeak := e.usage(e.operator), e.heap()
	e.deleteAll(ns)
	deleted := time.Now()
	time.Sleep(quiet)
	after, heapAfter := e.usage(e.operator), e.heap()
	e.profile("heap", "operator-heap-after-churn.pprof")
	t.Logf("leak: operator RSS %.1f MiB before, %.1f MiB with %d settled, %.1f MiB %s after they were deleted",
		before.RSSMiB, peak.RSSMiB, n, after.RSSMiB, quiet)
	t.Logf("leak: operator live heap %.1f MiB before (%.1f MiB kept Events), %.1f MiB with %d settled (%.1f), %.1f MiB %s after they were deleted (%.1f)",
		heapBefore.LiveMiB, heapBefore.EventsMiB, heapPeak.LiveMiB, n, heapPeak.EventsMiB, heapAfter.LiveMiB, quiet, heapAfter.EventsMiB)
	rows := churnRows(n, before, after, heapBefore, heapAfter)
	if !e.sz.Full {
		return rows
	}
	// client-go's broadcaster drops an Event 6 to 12 minutes after it was
	// recorded; the runtime returns what is freed gradually.
	late := after
	e.tryUntil(13*time.Minute, func() bool {
		time.Sleep(15 * time.Second)
		late = e.usage(e.operator)
		return late.RSSMiB <= 1.1*before.RSSMiB
	})
	heapLate := e.heap()
	waited := time.Since(deleted).Round(time.Second)
	t.Logf("leak: operator RSS %.1f MiB, live heap %.1f MiB (%.1f MiB kept Events) %s after the Delegations were deleted",
		late.RSSMiB, heapLate.LiveMiB, heapLate.EventsMiB, waited)
	return append(rows, row{Name: "operator RSS after churn, kept Events expired", Unit: "MiB", Value: late.RSSMiB,
		Floor: before.RSSMiB, FloorOf: rows[0].FloorOf + fmt.Sprintf(" (read %s after)", waited), Target: "≤ 1.1× floor", Met: ratioAtMost(1.1)})
}
