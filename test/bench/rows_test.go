/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

func seconds(d time.Duration) float64 { return d.Seconds() }
func millis(d time.Duration) float64  { return float64(d.Microseconds()) / 1000 }

func pollEvery(d time.Duration) func(*v1alpha1.AgentSpec) {
	return func(s *v1alpha1.AgentSpec) { s.PollInterval = &metav1.Duration{Duration: d} }
}

// dispatch creates Delegations at a steady rate and measures creation →
// SendMessage at the agent, beside creation → add event at a plain informer
// for the same objects.
func (e *env) dispatch() []row {
	watches := e.floorClient(floorJob{Namespace: e.namespace("floor"), Kind: "dispatch", N: e.sz.DispatchN, Rate: e.sz.DispatchRate,
		QPS: float32(e.sz.QPS), Burst: e.sz.Burst}).Latencies
	sends, _ := e.dispatchLatencies("dispatch")
	floor := fmt.Sprintf("add event at a plain client's informer, its own process (%d creates at %g/s)", e.sz.DispatchN, e.sz.DispatchRate)
	return []row{
		{Name: "dispatch p50", Unit: "ms", Value: millis(percentile(sends, 0.5)), Floor: millis(percentile(watches, 0.5)),
			FloorOf: floor, Target: "≤ 2× floor", Met: ratioAtMost(2)},
		{Name: "dispatch p99", Unit: "ms", Value: millis(percentile(sends, 0.99)), Floor: millis(percentile(watches, 0.99)),
			FloorOf: floor, Target: "≤ 5× floor", Met: ratioAtMost(5)},
	}
}

// dispatchLatencies runs one dispatch in a new tenant: creation → send at
// the agent, and creation → add event at the plain informer, per
// Delegation; the Delegations are deleted before it returns.
func (e *env) dispatchLatencies(prefix string) (sends, watches []time.Duration) {
	t, n := e.t, e.sz.DispatchN
	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant(prefix, ag.URL(), pollEvery(time.Second))
	created := make([]time.Time, n)
	tick := time.NewTicker(time.Duration(float64(time.Second) / e.sz.DispatchRate))
	var wg sync.WaitGroup
	for i := range n {
		<-tick.C
		wg.Go(func() {
			created[i] = time.Now()
			if err := e.kube.Create(context.Background(), delegation(ns, fmt.Sprintf("d-%05d", i), "quick")); err != nil {
				t.Error(err)
			}
		})
	}
	tick.Stop()
	wg.Wait()
	if !e.tryUntil(e.sz.Wait, func() bool { return ag.sendCount() == n }) {
		t.Logf("%s: only %d of %d sends arrived within %s; the rest count as %s", prefix, ag.sendCount(), n, e.sz.Wait, e.sz.Wait)
	}
	sends, watches = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range n {
		name := fmt.Sprintf("d-%05d", i)
		at, ok := ag.sendAt(name)
		if !ok {
			at = created[i].Add(e.sz.Wait)
		}
		sends = append(sends, at.Sub(created[i]))
		if seen, ok := e.seen.addedAt(ns, name); ok {
			watches = append(watches, seen.Sub(created[i]))
		}
	}
	e.waitUntil("the dispatched Delegations succeed", e.sz.Wait, func() bool {
		return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) == n
	})
	e.deleteAll(ns)
	return sends, watches
}

var benchItem = schema.GroupVersionKind{Group: "bench.tether.dev", Version: "v1", Kind: "BenchItem"}

// throughput creates Delegations at once and waits until all succeed, and
// counts the API server's writes per Delegation to Succeeded and through
// deletion. The floor is a plain client at the operator's QPS, in its own
// process, creating a trivial custom resource and updating its status once.
func (e *env) throughput() []row {
	t, n := e.t, e.sz.ThroughputN
	ctx := context.Background()

	floorNS := e.namespace("floor")
	before, err := apiWrites(ctx, e.config, "benchitems")
	must(t, err)
	floorRate := e.floorClient(floorJob{Namespace: floorNS, Kind: "throughput", N: n, QPS: float32(e.sz.QPS), Burst: e.sz.Burst}).Rate
	afterStatus, err := apiWrites(ctx, e.config, "benchitems")
	must(t, err)
	e.parallel(n, func(i int) error { return e.kube.Delete(ctx, benchItemIn(floorNS, fmt.Sprintf("item-%05d", i))) })
	afterDelete, err := apiWrites(ctx, e.config, "benchitems")
	must(t, err)
	floorWrites := (afterStatus - before - float64(n)) / float64(n)          // beyond the create
	floorWritesDeleted := (afterDelete - before - 2*float64(n)) / float64(n) // beyond create and delete

	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant("throughput", ag.URL(), pollEvery(time.Second))
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = delegation(ns, fmt.Sprintf("t-%05d", i), "quick")
	}
	w0, own0 := e.writes()
	start := time.Now()
	e.createAll(objs)
	succeeded := func() int { return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) }
	if !e.tryUntil(e.sz.Wait, func() bool { return succeeded() == n }) {
		t.Logf("throughput: only %d of %d Succeeded within %s", succeeded(), n, e.sz.Wait)
	}
	rate := float64(succeeded()) / e.seen.lastReached(ns, v1alpha1.PhaseSucceeded).Sub(start).Seconds()
	time.Sleep(2 * time.Second) // writes that follow the last phase change count too
	w1, own1 := e.writes()
	e.deleteAll(ns)
	time.Sleep(2 * time.Second)
	w2, own2 := e.writes()
	perSucceeded := ((w1 - w0) - (own1 - own0)) / float64(n)
	perDeleted := ((w2 - w0) - (own2 - own0)) / float64(n)

	floor := fmt.Sprintf("plain client at %g QPS, its own process: create + 1 status update", e.sz.QPS)
	return []row{
		{Name: "throughput", Unit: "Delegations/s", Value: rate, Floor: floorRate, FloorOf: floor + fmt.Sprintf(" (%d at once)", n),
			Target: "≥ 0.85× floor", Met: ratioAtLeast(0.85)},
		{Name: "API writes to Succeeded", Unit: "per Delegation", Value: perSucceeded, Floor: floorWrites,
			FloorOf: "plain client's status writes per object", Target: "≤ 3", Met: valueAtMost(3)},
		{Name: "API writes with deletion", Unit: "per Delegation", Value: perDeleted, Floor: floorWritesDeleted,
			FloorOf: "the same, deleted", Target: "≤ 4", Met: valueAtMost(4)},
	}
}

// writes returns the API server's count of Delegation writes and how many
// of them this harness sent.
func (e *env) writes() (server, own float64) {
	w, err := apiWrites(context.Background(), e.config, "delegations")
	must(e.t, err)
	return w, float64(e.ownWrites.Load())
}

// namespace creates a plain namespace.
func (e *env) namespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-" + prefix + "-"}}
	must(e.t, e.kube.Create(context.Background(), ns))
	return ns.Name
}

// cascade deletes a root with running children and measures until every
// child's agent received CancelTask, beside the garbage collector deleting
// as many plain owned objects.
func (e *env) cascade() []row {
	t, n := e.t, e.sz.CascadeN
	ctx := context.Background()

	floorNS := e.namespace("gc")
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: floorNS, Name: "owner"}}
	must(t, e.kube.Create(ctx, owner))
	deps := make([]client.Object, n)
	for i := range deps {
		deps[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: floorNS, Name: fmt.Sprintf("dep-%05d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	}
	e.createAll(deps)
	e.waitUntil("the informer sees the owned ConfigMaps", time.Minute, func() bool { return e.seen.configMapsIn(floorNS) == n+1 })
	start := time.Now()
	must(t, e.kube.Delete(ctx, owner, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	e.waitUntil("the garbage collector deletes the owned ConfigMaps", e.sz.Wait, func() bool { return e.seen.configMapsIn(floorNS) == 0 })
	gc := time.Since(start)

	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant("cascade", ag.URL(), pollEvery(10*time.Second))
	objs := make([]client.Object, 0, 1+n)
	objs = append(objs, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"}})
	for i := range n {
		d := delegation(ns, fmt.Sprintf("c-%05d", i), "forever")
		d.Spec.ParentRef = &v1alpha1.LocalRef{Name: "root"}
		objs = append(objs, d)
	}
	must(t, e.kube.Create(ctx, objs[0]))
	e.createAll(objs[1:])
	running := func() int { return e.seen.countNamed(ns, "c-", phaseIs(v1alpha1.PhaseRunning)) }
	if !e.tryUntil(e.sz.Wait, func() bool { return running() >= n }) {
		t.Logf("cascade: only %d of %d children Running within %s", running(), n, e.sz.Wait)
	}
	children := running()
	start = time.Now()
	must(t, e.kube.Delete(ctx, objs[0], client.PropagationPolicy(metav1.DeletePropagationBackground)))
	if !e.tryUntil(e.sz.Wait, func() bool { c, _ := ag.cancelledTasks(); return c >= children }) {
		c, _ := ag.cancelledTasks()
		t.Logf("cascade: only %d of %d children's tasks got CancelTask within %s", c, children, e.sz.Wait)
	}
	_, last := ag.cancelledTasks()
	cascade := last.Sub(start)
	if last.IsZero() {
		cascade = e.sz.Wait
	}
	if !e.tryUntil(e.sz.Wait, func() bool { return e.seen.count(ns, nil) == 0 }) {
		t.Logf("cascade: %d children still there after %s", e.seen.count(ns, nil), e.sz.Wait)
	}
	return []row{{Name: "cascade to CancelTask", Unit: "s", Value: seconds(cascade), Floor: seconds(gc),
		FloorOf: fmt.Sprintf("garbage collector deleting %d owned ConfigMaps", n), Target: "≤ 0.02× floor", Met: ratioAtMost(0.02)}}
}

// leases holds leased Delegations, then holds them again beside an Agent
// that never answers, and reads the operator's footprint at the end of the
// first hold beside a plain informer process caching the same Delegations.
func (e *env) leases() []row {
	t, n, ttl := e.t, e.sz.LeasesN, e.sz.LeaseTTL
	ctx := context.Background()
	informer := e.startPlainInformer()

	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant("leases", ag.URL(), func(s *v1alpha1.AgentSpec) {
		pollEvery(ttl / 3)(s)
		if e.sz.LeaseCalls > 0 {
			s.MaxConcurrentCalls = ptr.To(int32(e.sz.LeaseCalls))
		}
	})
	objs := make([]client.Object, n)
	for i := range objs {
		d := delegation(ns, fmt.Sprintf("l-%05d", i), "forever")
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}
		objs[i] = d
	}
	e.createAll(objs)
	sent := func() int {
		return e.seen.count(ns, func(p v1alpha1.Phase) bool { return p != "" && p != v1alpha1.PhasePending })
	}
	if !e.tryUntil(e.sz.Wait, func() bool { return sent() == n }) {
		t.Logf("leases: only %d of %d sent within %s", sent(), n, e.sz.Wait)
	}

	hold := func() (from, to time.Time) {
		from = time.Now()
		time.Sleep(e.sz.Hold)
		return from, time.Now()
	}
	opBefore, infBefore, connsBefore := e.usage(e.operator), e.usage(informer), ag.conns.Load()
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		e.profile(fmt.Sprintf("profile?seconds=%d", int(e.sz.Hold.Seconds())), "operator-cpu-hold.pprof")
	}()
	from, to := hold()
	opAfter, infAfter, connsAfter := e.usage(e.operator), e.usage(informer), ag.conns.Load()
	<-profiled
	e.profile("heap", "operator-heap-hold.pprof")
	inCluster := e.seen.count("", nil)
	started, renewals := ag.leases()
	calm := analyseLeases(started, renewals, from, to, ttl)
	calmWrites := e.seen.updatesBetween(ns, from, to)

	hung := newHungAgent()
	defer hung.Close()
	hungNS := e.tenant("hung", hung.URL(), func(s *v1alpha1.AgentSpec) {
		s.RequestTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	})
	for i := range e.sz.HungN {
		must(t, e.kube.Create(ctx, delegation(hungNS, fmt.Sprintf("h-%02d", i), "forever")))
	}
	from, to = hold()
	started, renewals = ag.leases()
	beside := analyseLeases(started, renewals, from, to, ttl)
	besideWrites := e.seen.updatesBetween(ns, from, to)
	t.Logf("leases: %d tasks; the hung agent received %d calls", calm.Tasks, hung.calls.Load())

	ideal := float64(calm.Tasks) * 3 / ttl.Seconds()
	leaseRows := func(prefix string, st leaseStats, writes int) []row {
		return []row{
			{Name: prefix + "renewals", Unit: "per s", Value: st.PerSecond, Floor: ideal,
				FloorOf: fmt.Sprintf("ideal: %d tasks × 3/ttl (ttl %s, %s hold)", st.Tasks, ttl, e.sz.Hold)},
			{Name: prefix + "renewal lateness p99", Unit: "s", Value: seconds(st.Lateness), FloorOf: "ideal",
				Target: "≤ 1 s", Met: valueAtMost(1)},
			{Name: prefix + "lapses", Unit: "tasks", Value: float64(st.Lapses), FloorOf: "ideal", Target: "0", Met: valueAtMost(0)},
			{Name: prefix + "renewal writes", Unit: "writes", Value: float64(writes), FloorOf: "ideal", Target: "0", Met: valueAtMost(0)},
		}
	}
	rows := leaseRows("", calm, calmWrites)
	rows = append(rows, leaseRows("beside a hung agent: ", beside, besideWrites)...)
	floor := fmt.Sprintf("plain informer process (%d Delegations in the cluster)", inCluster)
	var perRenewal float64
	if calm.Renewals > 0 {
		perRenewal = (opAfter.CPUSeconds - opBefore.CPUSeconds) * 1000 / float64(calm.Renewals)
	}
	t.Logf("leases: %d connections opened to the agent during the first hold", connsAfter-connsBefore)
	return append(rows,
		row{Name: "operator RSS", Unit: "MiB", Value: opAfter.RSSMiB, Floor: infAfter.RSSMiB, FloorOf: floor,
			Target: "< 150 MiB", Met: valueBelow(150)},
		row{Name: "operator CPU during hold", Unit: "s", Value: opAfter.CPUSeconds - opBefore.CPUSeconds,
			Floor: infAfter.CPUSeconds - infBefore.CPUSeconds, FloorOf: floor + fmt.Sprintf(", %s hold", e.sz.Hold)},
		row{Name: "CPU per renewal", Unit: "CPU-ms", Value: perRenewal, FloorOf: "the operator's CPU during the first hold / renewals",
			Target: "≤ 0.15 CPU-ms", Met: valueAtMost(0.15)},
		row{Name: "connections opened during hold", Unit: "conns", Value: float64(connsAfter - connsBefore),
			FloorOf: "ideal: renewals on kept-alive connections"},
	)
}

func (e *env) usage(p *cluster.Process) usage {
	u, err := usageOf(p.Pid())
	must(e.t, err)
	return u
}

// startPlainInformer runs this test binary as a process that only caches
// every Delegation, for the footprint floor.
func (e *env) startPlainInformer() *cluster.Process {
	t := e.t
	self, err := os.Executable()
	must(t, err)
	p, err := cluster.StartProcess(cluster.ProcessOptions{Name: "plain informer", Path: self,
		Env: []string{plainInformerEnv + "=" + e.cluster.Kubeconfig()}, LogPath: filepath.Join(t.TempDir(), "informer.log")})
	must(t, err)
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = p.WaitFor(ctx, regexp.MustCompile("plain informer synced"))
	must(t, err)
	return p
}
