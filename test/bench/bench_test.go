/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBench runs every row against one control plane and one operator
// process, prints the table and writes it with a CSV and a chart. At smoke
// size (the default) it checks only that every row got a number and the
// files were written, and leaves the shards row out unless BENCH_ROWS names
// it; BENCH_SCALE=full (make bench) runs the sizes the
// targets are stated for.
func TestBench(t *testing.T) {
	sz := sizesFromEnv(t)
	out := sz.Out
	switch {
	case out != "":
	case sz.Full:
		root, err := os.Getwd()
		must(t, err)
		out = filepath.Join(root, "..", "..", "bin", "bench")
	default:
		out = t.TempDir()
	}
	measured := commit() // before the operator is built from the tree
	must(t, os.MkdirAll(out, 0o755))
	if !sz.Full {
		sz.OperatorEnv = append(sz.OperatorEnv, memprofilerateEnv)
	}
	e := newEnv(t, sz)
	e.out = out

	var rows []row
	for _, phase := range []struct {
		name string
		run  func() []row
	}{{"dispatch", e.dispatch}, {"throughput", e.throughput}, {"cascade", e.cascade}, {"leases", e.leases},
		{"settle", e.settle}, {"leak", e.leak}, {"heap", e.liveHeap}, {"node", e.node}, {"tracing", e.tracingOverhead},
		{"faults", e.faultRuns}, {"hostile", e.hostileStreams}, {"tenants", e.tenants},
		{"shards", e.shards}} { // shards last: it replaces the operator
		if len(sz.Rows) > 0 && !slices.Contains(sz.Rows, phase.name) {
			continue
		}
		if phase.name == "heap" && sz.Full {
			continue // the smoke's leak check; the leak row measures the full size
		}
		if phase.name == "leak" && !sz.Full && len(sz.Rows) == 0 {
			continue // the smoke's heap check churns and gives the leak rows
		}
		if len(sz.Rows) == 0 && !sz.Full && slices.Contains([]string{"shards", "faults", "hostile", "tenants"}, phase.name) {
			// Minutes of shard processes, elections and a failover, of
			// faults and kills, or of dripping streams, and the tenants'
			// twenty namespaces with floods: the smoke leaves them to the
			// e2e and controller tests, which run the same paths with
			// their own checks (BENCH_ROWS=shards, faults, hostile or
			// tenants runs them at smoke size).
			t.Logf("%s: left to make bench and BENCH_ROWS=%s at smoke size", phase.name, phase.name)
			continue
		}
		start := time.Now()
		t.Logf("%s: starting", phase.name)
		rows = append(rows, phase.run()...)
		t.Logf("%s: done in %s", phase.name, time.Since(start).Round(time.Second))
	}

	header := fmt.Sprintf("tether benchmark, %s, operator at %s, %s", time.Now().UTC().Format(time.RFC3339), measured, scale(sz))
	fmt.Printf("\n%s\n%s\n", header, table(rows))
	must(t, writeReport(out, header, rows))
	t.Logf("report written to %s", out)

	for _, r := range rows {
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || math.IsNaN(r.Floor) || math.IsInf(r.Floor, 0) {
			t.Errorf("row %q has no number: value %v, floor %v", r.Name, r.Value, r.Floor)
		}
	}
	for _, f := range []string{"table.txt", "results.csv", "results.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
}

func scale(sz sizes) string {
	return fmt.Sprintf("sizes: dispatch %d at %g/s, throughput %d, cascade %d, leases %d (ttl %s, hold %s, %d to a hung agent), "+
		"settle %d per agent (tasks of %s), leak %d, shards %d (settle %s), failover %d, shard leases %d (ttl %s), "+
		"tenants %d namespaces (%g/s each, %s × %d rounds each way, flood %d under inFlight %d), client %g QPS/%d burst",
		sz.DispatchN, sz.DispatchRate, sz.ThroughputN, sz.CascadeN, sz.LeasesN, sz.LeaseTTL, sz.Hold, sz.HungN,
		sz.SettleN, sz.SettleRun, sz.LeakN, sz.ShardsN, sz.ShardSettle, sz.FailoverN, sz.ShardLeasesN, sz.ShardLeaseTTL,
		sz.TenantNamespaces, sz.TenantRate, sz.TenantRun, sz.TenantRounds, sz.TenantFlood, sz.TenantInFlight, sz.QPS, sz.Burst)
}

// commit names the source measured: the commit, marked when the tree has
// uncommitted changes.
func commit() string {
	rev, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "an unknown commit"
	}
	c := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}
