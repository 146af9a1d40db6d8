/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
)

var (
	leadingShard = regexp.MustCompile(`"leading the shard"`)
	waitingLease = regexp.MustCompile(`Attempting to acquire leader lease`)
)

const (
	shardNamespaces = 12
	failoverTTL     = 15 * time.Second
)

// shards runs last: it replaces the one operator by sharded ones. It
// measures per-process RSS over the same Delegations with 1, 2 and 3
// shards (the API server filtering, and with 3 shards also the operator
// filtering itself), then SIGKILLs the leader of one of two shards with two
// replicas each and measures how long its leased tasks went unrenewed.
func (e *env) shards() []row {
	ag := newBenchAgent()
	defer ag.Close()
	// Tenants are made while the one operator still runs (it reads their
	// cards); polls every 10 minutes cost nothing in the footprint rows.
	namespaces := make([]string, shardNamespaces)
	for i := range namespaces {
		namespaces[i] = e.tenant("shards", ag.URL(), pollEvery(10*time.Minute))
	}
	n := e.sz.ShardsN
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = delegation(namespaces[i%len(namespaces)], fmt.Sprintf("s-%05d", i), "forever")
	}
	e.createAll(objs)
	running := func(ns string) func() bool {
		return func() bool {
			return e.seen.count(ns, func(p v1alpha1.Phase) bool { return p == v1alpha1.PhaseRunning }) == n
		}
	}
	if !e.tryUntil(e.sz.Wait, running("")) {
		e.t.Logf("shards: only %d of %d running within %s", e.seen.count("", func(p v1alpha1.Phase) bool { return p == v1alpha1.PhaseRunning }), n, e.sz.Wait)
	}
	_ = e.operator.Stop(10 * time.Second)
	e.operator = nil

	var rows []row
	var one float64
	for _, run := range []struct {
		shards    int
		filtering string
	}{{1, "auto"}, {2, "auto"}, {3, "auto"}, {3, "client"}} {
		rss, largest := e.shardRSS(run.shards, run.filtering)
		if run.shards == 1 {
			one = rss
		}
		where := "server-side"
		if run.filtering == "client" {
			where = "client-side"
		}
		// Namespaces are split by hash, not evenly: the largest process is
		// measured against its own shard's share of the Delegations.
		share := shareOf(namespaces, largest, run.shards)
		rows = append(rows, row{Name: fmt.Sprintf("RSS per process, %d shard(s), %s", run.shards, where), Unit: "MiB", Value: rss,
			Floor: one * share, FloorOf: fmt.Sprintf("one process's RSS × the largest process's share, %d of %d namespaces (%d Delegations)",
				int(math.Round(share*float64(len(namespaces)))), len(namespaces), n),
			Target: "its share of one process ±25%", Met: func(r row) bool { return math.Abs(r.Value-r.Floor) <= 0.25*r.Floor }})
	}
	rows = append(rows, e.failover(ag, namespaces)...)
	return append(rows, e.shardLeases()...)
}

// shardProcesses starts replicas operator processes for each of n shards.
func (e *env) shardProcesses(n, replicas int, filtering string) [][]*cluster.Process {
	procs := make([][]*cluster.Process, n)
	for i := range n {
		for r := range replicas {
			args := []string{"--leader-elect", "--leader-election-namespace=default", "--metrics-bind-address=0",
				"--health-probe-bind-address=0", fmt.Sprintf("--shards=%d", n), fmt.Sprintf("--shard=%d", i),
				"--shard-filtering=" + filtering,
				fmt.Sprintf("--kube-api-qps=%g", e.sz.QPS), fmt.Sprintf("--kube-api-burst=%d", e.sz.Burst)}
			p, err := cluster.StartProcess(cluster.ProcessOptions{
				Name: fmt.Sprintf("shard %d/%d replica %d", i, n, r), Path: filepath.Join(e.root, "bin", "manager"), Args: args,
				Env: []string{"KUBECONFIG=" + e.cluster.Kubeconfig()}, LogPath: filepath.Join(e.t.TempDir(), "operator.log"),
			})
			must(e.t, err)
			e.t.Cleanup(func() {
				_ = p.Stop(10 * time.Second)
				if e.t.Failed() {
					e.t.Logf("%s log (last lines):\n%s", p.Name(), cluster.Tail(p.Log(), 30))
				}
			})
			procs[i] = append(procs[i], p)
		}
	}
	for _, shardProcs := range procs {
		e.waitUntil("a shard has a leader", e.sz.Wait, func() bool { return leaderIndex(shardProcs) >= 0 })
	}
	return procs
}

// leaderIndex is the running process that leads its shard, or -1.
func leaderIndex(procs []*cluster.Process) int {
	return slices.IndexFunc(procs, func(p *cluster.Process) bool { return !p.Exited() && leadingShard.MatchString(p.Log()) })
}

// shareOf is the share of the Delegations shard index of n holds: they are
// spread evenly over the namespaces.
func shareOf(namespaces []string, index, n int) float64 {
	own := 0
	for _, ns := range namespaces {
		if shard.Of(ns, n).Index == index {
			own++
		}
	}
	return float64(own) / float64(len(namespaces))
}

// shardRSS runs one process per shard until each has had time to reconcile
// its share, and returns the largest RSS among them and its shard.
func (e *env) shardRSS(n int, filtering string) (most float64, largest int) {
	procs := e.shardProcesses(n, 1, filtering)
	time.Sleep(e.sz.ShardSettle)
	for i, p := range procs {
		if rss := e.usage(p[0]).RSSMiB; rss > most {
			most, largest = rss, i
		}
	}
	for _, p := range procs {
		_ = p[0].Stop(10 * time.Second)
	}
	e.t.Logf("shards: %d shard(s), filtering %s: largest RSS %.1f MiB (shard %d)", n, filtering, most, largest)
	return most, largest
}

// failover runs two shards of two replicas, gives the namespaces of shard 0
// leased tasks and SIGKILLs its leader.
func (e *env) failover(ag *benchAgent, namespaces []string) []row {
	ctx := context.Background()
	procs := e.shardProcesses(2, 2, "auto")
	defer func() {
		for _, shardProcs := range procs {
			for _, p := range shardProcs {
				_ = p.Stop(10 * time.Second)
			}
		}
	}()
	var own []string
	for _, ns := range namespaces {
		if shard.Of(ns, 2).Index == 0 {
			own = append(own, ns)
		}
	}
	if len(own) == 0 {
		e.t.Fatalf("none of %d namespaces falls in shard 0 of 2", len(namespaces))
	}
	objs := make([]client.Object, e.sz.FailoverN)
	for i := range objs {
		d := delegation(own[i%len(own)], fmt.Sprintf("f-%05d", i), "forever")
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: failoverTTL}}
		objs[i] = d
	}
	e.createAll(objs)
	taskIDs := map[string]bool{}
	e.waitUntil("the leased tasks run", e.sz.Wait, func() bool {
		for _, ns := range own {
			list := &v1alpha1.DelegationList{}
			if e.kube.List(ctx, list, client.InNamespace(ns)) != nil {
				return false
			}
			for _, d := range list.Items {
				if strings.HasPrefix(d.Name, "f-") && d.Status.Phase == v1alpha1.PhaseRunning && d.Status.TaskID != "" {
					taskIDs[d.Status.TaskID] = true
				}
			}
		}
		return len(taskIDs) == e.sz.FailoverN
	})
	// A renewal each, then the shard's standby must be waiting.
	time.Sleep(failoverTTL / 3)
	leader := procs[0][leaderIndex(procs[0])]
	for _, p := range procs[0] {
		if p != leader {
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := p.WaitFor(waitCtx, waitingLease)
			cancel()
			must(e.t, err)
		}
	}
	killed := time.Now()
	leader.Kill()
	renewedAfter := func(id string) (time.Time, bool) {
		_, renewals := ag.leases()
		i := slices.IndexFunc(renewals[id], func(at time.Time) bool { return at.After(killed) })
		if i < 0 {
			return time.Time{}, false
		}
		return renewals[id][i], true
	}
	e.waitUntil("the standby renews every task", 2*time.Minute, func() bool {
		for id := range taskIDs {
			if _, ok := renewedAfter(id); !ok {
				return false
			}
		}
		return true
	})
	_, renewals := ag.leases()
	gaps := make([]time.Duration, 0, len(taskIDs))
	lapses := 0
	for id := range taskIDs {
		first, _ := renewedAfter(id)
		gaps = append(gaps, first.Sub(killed))
		i := slices.Index(renewals[id], first)
		if i > 0 && first.Sub(renewals[id][i-1]) > failoverTTL {
			lapses++
		}
	}
	slices.Sort(gaps)
	lease := fmt.Sprintf("Lease duration (%d leased tasks, ttl %s)", len(gaps), failoverTTL)
	return []row{
		{Name: "failover gap p50 (SIGKILL → standby's first renewal)", Unit: "s", Value: seconds(percentile(gaps, 0.5)),
			Floor: shard.DefaultLeaseDuration.Seconds(), FloorOf: lease, Target: "≤ 10 s", Met: valueAtMost(10)},
		{Name: "failover gap max", Unit: "s", Value: seconds(gaps[len(gaps)-1]),
			Floor: shard.DefaultLeaseDuration.Seconds(), FloorOf: lease, Target: "≤ 10 s", Met: valueAtMost(10)},
		{Name: "failover lapses", Unit: "tasks", Value: float64(lapses), FloorOf: "ideal", Target: "0", Met: valueAtMost(0)},
	}
}
