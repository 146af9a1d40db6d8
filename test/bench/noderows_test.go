/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
)

// oldSettleRate is what the design that made every call inline on the
// reconcile workers settled per second at the JS SDK agent on this 2-core
// machine: 10,000 Delegations created at once, pollInterval 5s.
const oldSettleRate = 39.5

// nodeSizes are the node part's knobs: SettleN Delegations are created at
// once at the JS SDK agent, LeasesN leased ones are held there for the
// run's Hold with its LeaseTTL, and the agent alone is timed for Probe.
type nodeSizes struct {
	SettleN, LeasesN int
	Probe            time.Duration
}

func nodeSizesFromEnv(e *env) nodeSizes {
	ns := nodeSizes{SettleN: 20, LeasesN: 20, Probe: time.Second}
	if e.sz.Full {
		ns = nodeSizes{SettleN: 10000, LeasesN: 10000, Probe: 10 * time.Second}
	}
	envInt(e.t, "BENCH_NODE_SETTLE_N", &ns.SettleN)
	envInt(e.t, "BENCH_NODE_LEASES_N", &ns.LeasesN)
	envDuration(e.t, "BENCH_NODE_PROBE", &ns.Probe)
	return ns
}

// nodePoll is the Agents' pollInterval here (the default).
const nodePoll = 5 * time.Second

// node measures the operator at an agent as slow as a single-process Node
// server: the JS SDK agent. First the agent alone (a plain client, as many
// calls at once as the operator's pool makes), then SettleN Delegations
// created at once until all are Succeeded, then LeasesN leased tasks held
// for Hold. The agent's own rate is the floor: where it cannot answer the
// renewals leases need, the operator must not ask for more than it answers
// (no read cut at its deadline), and the rows say how much it answers.
func (e *env) node() []row {
	t, nz := e.t, nodeSizesFromEnv(e)
	ag, err := startNodeAgent(context.Background(), e.root, t.TempDir())
	must(t, err)
	defer ag.Close()

	floorRate, taskIDs := e.nodeSettleFloor(ag, min(nz.SettleN, 2000))
	capacity := e.nodeReadFloor(ag, taskIDs, nz.Probe)
	t.Logf("node: the JS SDK agent alone settles %.1f tasks/s (send + read) and answers %.0f GetTask/s, %d at a time (uptime: %s)",
		floorRate, capacity, agentio.DefaultCallsPerAgent, loadAverage())

	settle, settleCut, settleAsked := e.nodeSettle(ag, nz.SettleN)
	leaseRows := e.nodeLeases(ag, nz.LeasesN, capacity)

	agentAlone := fmt.Sprintf("the agent alone: a plain client's send + read per task, %d at a time (%d tasks)",
		agentio.DefaultCallsPerAgent, min(nz.SettleN, 2000))
	rows := make([]row, 0, 2+len(leaseRows))
	rows = append(rows,
		row{Name: "JS SDK agent: settle rate", Unit: "Delegations/s", Value: settle, Floor: floorRate,
			FloorOf: agentAlone + fmt.Sprintf("; %d created at once, pollInterval %s", nz.SettleN, nodePoll),
			Target:  fmt.Sprintf("≥ %g/s (the inline design)", oldSettleRate), Met: valueNotBelow(oldSettleRate)},
		row{Name: "JS SDK agent: reads cut at their deadline while settling", Unit: "reads", Value: float64(settleCut),
			FloorOf: fmt.Sprintf("ideal (of %d reads asked)", settleAsked), Target: "0", Met: valueAtMost(0)},
	)
	return append(rows, leaseRows...)
}

// nodeSettleFloor sends n tasks that complete at once through a plain
// client, DefaultCallsPerAgent at a time, reads each back until it ended,
// and returns tasks per second and their ids.
func (e *env) nodeSettleFloor(ag *nodeAgent, n int) (float64, []string) {
	t := e.t
	ctx := context.Background()
	c, err := tethera2a.Dial(ctx, tethera2a.Endpoint{URL: ag.URL()})
	must(t, err)
	defer c.Close()
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for range agentio.DefaultCallsPerAgent {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				task, err := c.Send(ctx, tethera2a.SendRequest{MessageID: fmt.Sprintf("floor-%05d-%d", i, start.UnixNano()),
					Text: fmt.Sprintf("quick id=floor-%05d", i)})
				for err == nil && !task.State.Terminal() {
					task, err = c.Get(ctx, task.ID, false)
				}
				if err != nil {
					failed.Add(1)
					continue
				}
				ids[i] = task.ID
			}
		})
	}
	wg.Wait()
	rate := float64(n-int(failed.Load())) / time.Since(start).Seconds()
	if f := failed.Load(); f > 0 {
		t.Logf("node: %d of the floor's %d tasks failed at the agent", f, n)
	}
	return rate, ids
}

// nodeReadFloor reads the given tasks with the lease extension for d,
// DefaultCallsPerAgent at a time, and returns answered reads per second:
// how many renewals the agent alone can answer.
func (e *env) nodeReadFloor(ag *nodeAgent, ids []string, d time.Duration) float64 {
	ctx := context.Background()
	c, err := tethera2a.Dial(ctx, tethera2a.Endpoint{URL: ag.URL()})
	must(e.t, err)
	defer c.Close()
	var answered, next atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for range agentio.DefaultCallsPerAgent {
		wg.Go(func() {
			for time.Now().Before(stop) {
				id := ids[int(next.Add(1))%len(ids)]
				if id == "" {
					continue
				}
				if _, err := c.Get(ctx, id, true); err == nil {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(answered.Load()) / time.Since(start).Seconds()
}

// nodeSettle creates n Delegations at once whose tasks complete at once and
// returns Succeeded per second, and the reads the operator asked and gave
// up on meanwhile.
func (e *env) nodeSettle(ag *nodeAgent, n int) (rate float64, cut, asked int) {
	t := e.t
	ns := e.tenant("node", ag.URL(), pollEvery(nodePoll))
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = delegation(ns, fmt.Sprintf("n-%05d", i), "quick")
	}
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		e.profile(fmt.Sprintf("profile?seconds=%d", e.profileSeconds()), "operator-cpu-node-settle.pprof")
	}()
	start := time.Now()
	e.createAll(objs)
	succeeded := func() int { return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) }
	if !e.tryUntil(e.sz.Wait, func() bool { return succeeded() == n }) {
		t.Logf("node: only %d of %d Succeeded within %s", succeeded(), n, e.sz.Wait)
	}
	end := e.seen.lastReached(ns, v1alpha1.PhaseSucceeded)
	rate = float64(succeeded()) / end.Sub(start).Seconds()
	asked, cut = ag.readsBetween(start, end.Add(time.Second))
	t.Logf("node: %d Delegations settled at %.1f/s; %d reads asked, %d cut at their deadline; calls at the agent so far: %s (uptime: %s)",
		succeeded(), rate, asked, cut, ag.calls(), loadAverage())
	<-profiled
	e.deleteAll(ns)
	return rate, cut, asked
}

// profileSeconds is how long the node part's CPU profiles run.
func (e *env) profileSeconds() int {
	if e.sz.Full {
		return 60
	}
	return 2
}

// nodeLeases holds n leased tasks at the agent for the run's Hold and
// returns the lease rows, beside what the agent alone answers.
func (e *env) nodeLeases(ag *nodeAgent, n int, capacity float64) []row {
	t, ttl := e.t, e.sz.LeaseTTL
	ns := e.tenant("node-leases", ag.URL(), pollEvery(nodePoll))
	objs := make([]client.Object, n)
	for i := range objs {
		d := delegation(ns, fmt.Sprintf("nl-%05d", i), "wait")
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}
		objs[i] = d
	}
	created := time.Now()
	e.createAll(objs)
	sent := func() int {
		return e.seen.count(ns, func(p v1alpha1.Phase) bool { return p != "" && p != v1alpha1.PhasePending })
	}
	if !e.tryUntil(e.sz.Wait, func() bool { return sent() == n }) {
		t.Logf("node: only %d of %d leased tasks sent within %s", sent(), n, e.sz.Wait)
	}
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		e.profile(fmt.Sprintf("profile?seconds=%d", int(e.sz.Hold.Seconds())), "operator-cpu-node-hold.pprof")
	}()
	from := time.Now()
	time.Sleep(e.sz.Hold)
	to := time.Now()
	<-profiled
	started, renewals := ag.leases()
	for id, at := range started {
		if at.Before(created) { // the floor's and the settle part's tasks
			delete(started, id)
		}
	}
	st := analyseLeases(started, renewals, from, to, ttl)
	asked, cut := ag.readsBetween(from, to)
	askedRate := float64(asked) / to.Sub(from).Seconds()
	t.Logf("node: %d leased tasks held %s: %.0f renewals/s answered, %.0f reads/s asked, %d cut, %d lapses, lateness p99 %s; calls at the agent so far: %s (uptime: %s)",
		st.Tasks, e.sz.Hold, st.PerSecond, askedRate, cut, st.Lapses, st.Lateness.Round(time.Millisecond), ag.calls(), loadAverage())
	e.deleteAll(ns)

	ideal := float64(st.Tasks) * 3 / ttl.Seconds()
	idealOf := fmt.Sprintf("ideal: %d tasks × 3/ttl (ttl %s, %s hold)", st.Tasks, ttl, e.sz.Hold)
	alone := fmt.Sprintf("the agent alone: a plain client's GetTask, %d at a time", agentio.DefaultCallsPerAgent)
	// Leases cannot all hold where the agent cannot answer their renewals:
	// then the operator must ask no more than the agent answers.
	short := capacity < ideal
	lapsesMet := func(r row) bool { return r.Value == 0 || (short && cut == 0) }
	lapsesTarget := "0"
	if short {
		lapsesTarget = fmt.Sprintf("0, or none cut: the agent answers %.0f/s of the %.0f/s needed", capacity, ideal)
	}
	return []row{
		{Name: "JS SDK agent: renewals answered alone", Unit: "per s", Value: capacity, Floor: ideal, FloorOf: idealOf + "; " + alone},
		{Name: "JS SDK agent: renewals", Unit: "per s", Value: st.PerSecond, Floor: ideal, FloorOf: idealOf + ", answered by the agent"},
		{Name: "JS SDK agent: reads asked during the hold", Unit: "per s", Value: askedRate, Floor: capacity,
			FloorOf: alone, Target: "≤ 1.1× floor", Met: ratioAtMost(1.1)},
		{Name: "JS SDK agent: reads cut at their deadline", Unit: "reads", Value: float64(cut), FloorOf: "ideal",
			Target: "0", Met: valueAtMost(0)},
		{Name: "JS SDK agent: renewal lateness p99", Unit: "s", Value: seconds(st.Lateness), FloorOf: "ideal",
			Target: "≤ 1 s", Met: valueAtMost(1)},
		{Name: "JS SDK agent: lapses", Unit: "tasks", Value: float64(st.Lapses), FloorOf: "ideal", Target: lapsesTarget, Met: lapsesMet},
	}
}

func valueNotBelow(x float64) func(row) bool { return func(r row) bool { return r.Value >= x } }

// loadAverage is the machine's load average (1, 5, 15 minutes), noted beside
// each measurement: a shared machine moves the numbers.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	var one, five, fifteen string
	if _, err := fmt.Sscan(string(b), &one, &five, &fifteen); err != nil {
		return "unknown"
	}
	return one + " " + five + " " + fifteen
}
