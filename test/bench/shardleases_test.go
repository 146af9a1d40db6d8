/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// shardLeases runs three shards of one replica each, gives them
// ShardLeasesN leased tasks (ShardLeaseTTL) spread over shardNamespaces
// namespaces and holds them for Hold: renewals per second, lateness,
// lapses, and the CPU the three processes spent per renewal.
func (e *env) shardLeases() []row {
	ag := newBenchAgent()
	defer ag.Close()
	n, ttl := e.sz.ShardLeasesN, e.sz.ShardLeaseTTL
	procs := e.shardProcesses(3, 1, "auto")
	defer func() {
		for _, p := range procs {
			_ = p[0].Stop(10 * time.Second)
		}
	}()
	namespaces := make([]string, shardNamespaces)
	for i := range namespaces {
		namespaces[i] = e.tenant("shard-leases", ag.URL(), pollEvery(ttl/3))
	}
	objs := make([]client.Object, n)
	for i := range objs {
		d := delegation(namespaces[i%len(namespaces)], fmt.Sprintf("sl-%05d", i), "forever")
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}
		objs[i] = d
	}
	e.createAll(objs)
	started := func() int { s, _ := ag.leases(); return len(s) }
	if !e.tryUntil(e.sz.Wait, func() bool { return started() >= n }) {
		e.t.Logf("shard leases: only %d of %d started within %s", started(), n, e.sz.Wait)
	}
	// One renewal round first: the hold starts from the tasks' steady cadence.
	time.Sleep(ttl / 3)
	cpu := func() float64 {
		var s float64
		for _, p := range procs {
			s += e.usage(p[0]).CPUSeconds
		}
		return s
	}
	before, from := cpu(), time.Now()
	time.Sleep(e.sz.Hold)
	after, to := cpu(), time.Now()
	startedAt, renewals := ag.leases()
	st := analyseLeases(startedAt, renewals, from, to, ttl)
	var perRenewal float64
	if st.Renewals > 0 {
		perRenewal = (after - before) * 1000 / float64(st.Renewals)
	}
	e.t.Logf("shard leases: %d tasks over 3 shards, %d renewals in %s, %.1f CPU-s", st.Tasks, st.Renewals, e.sz.Hold, after-before)
	of := fmt.Sprintf("ideal: %d tasks × 3/ttl (ttl %s, %s hold, 3 shards)", st.Tasks, ttl, e.sz.Hold)
	return []row{
		{Name: "3 shards: renewals", Unit: "per s", Value: st.PerSecond, Floor: float64(st.Tasks) * 3 / ttl.Seconds(), FloorOf: of},
		{Name: "3 shards: renewal lateness p99", Unit: "s", Value: seconds(st.Lateness), FloorOf: "ideal",
			Target: "≤ 1 s", Met: valueAtMost(1)},
		{Name: "3 shards: lapses", Unit: "tasks", Value: float64(st.Lapses), FloorOf: "ideal", Target: "0", Met: valueAtMost(0)},
		{Name: "3 shards: CPU per renewal", Unit: "CPU-ms", Value: perRenewal, FloorOf: "the three processes' CPU during the hold / renewals",
			Target: "≤ 0.15 CPU-ms", Met: valueAtMost(0.15)},
	}
}
