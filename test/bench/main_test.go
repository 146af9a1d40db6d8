/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package bench measures the operator on a real local control plane and
// sets every number beside a floor measured in the same run on the same
// control plane: what a plain informer, a plain client or the garbage
// collector achieves for the same work. The operator runs as its own
// process (built from ./cmd), so its memory and CPU are its own; agents are
// a2a-go servers on loopback that record when each call arrives, so
// renewal lateness and lapses are measured where they matter.
//
// `go test` runs a smoke-sized pass (a few Delegations, seconds of holding
// leases) that checks only that every row got a number and the report was
// written. `make bench` (BENCH_SCALE=full) runs the full sizes and writes
// the table, a CSV and a PNG chart to bin/bench (or BENCH_OUT). Nothing
// about time is asserted: machines are noisy.
package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// The footprint floor runs this binary as a plain informer process.
	if kubeconfig := os.Getenv(plainInformerEnv); kubeconfig != "" {
		if err := runPlainInformer(kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, "plain informer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The dispatch and throughput floors run it as a plain client.
	if job := os.Getenv(floorClientEnv); job != "" {
		if err := runFloorClient(job); err != nil {
			fmt.Fprintln(os.Stderr, "floor client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Informer and client warnings would bury the table.
	logf.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// sizes are the knobs of a run. BENCH_SCALE=full starts from the sizes the
// performance targets are stated for; anything else from a smoke run of
// well under a minute. Each field can be overridden by its variable.
type sizes struct {
	Full bool
	// DispatchN Delegations are created at DispatchRate per second.
	DispatchN    int
	DispatchRate float64
	// ThroughputN Delegations are created at once and run to Succeeded.
	ThroughputN int
	// CascadeN running children of one root are cancelled by deleting it.
	CascadeN int
	// LeasesN leased Delegations with LeaseTTL are held for Hold, then held
	// again for Hold beside HungN Delegations to an Agent that never answers.
	LeasesN  int
	LeaseTTL time.Duration
	Hold     time.Duration
	HungN    int
	// SettleN Delegations per agent kind (streaming, polled, pushing) run
	// tasks that end SettleRun after they start.
	SettleN   int
	SettleRun time.Duration
	// LeakN Delegations are created, settled and deleted between two
	// readings of the operator's RSS.
	LeakN int
	// LeaseCalls is the leases Agent's spec.maxConcurrentCalls (0: the
	// default).
	LeaseCalls int
	// QPS and Burst are the operator's client limits (--kube-api-qps,
	// --kube-api-burst) and those of the plain-client floor.
	QPS   float64
	Burst int
	// Wait bounds each wait for the operator (a slow operator is measured,
	// not failed, until this runs out).
	Wait time.Duration
	// ShardsN Delegations are held by 1, 2 and 3 shards in turn, each for
	// ShardSettle before its RSS is read; FailoverN leased tasks are on the
	// shard whose leader is killed.
	ShardsN     int
	ShardSettle time.Duration
	FailoverN   int
	// ShardLeasesN leased tasks (ShardLeaseTTL) are held for Hold by three
	// shards.
	ShardLeasesN  int
	ShardLeaseTTL time.Duration
	// FaultN Delegations run through a proxy failing each of FaultRates of
	// all calls, for FaultSeeds seeds, with the operator SIGKILLed and
	// started again FaultKills times while they run; each has FaultTimeout.
	FaultN       int
	FaultRates   []float64
	FaultSeeds   int
	FaultKills   int
	FaultTimeout time.Duration
	// HostileAgents agents each drip 1 MiB events on the streams of
	// HostileTasks tasks while LeasesN leased tasks of another tenant are
	// held for Hold.
	HostileAgents int
	HostileTasks  int
	// TenantNamespaces team namespaces share one Agent (TenantPlaces call
	// places, each send held TenantHold by the agent): two flood it without
	// a quota, keeping TenantBacklog Delegations each not yet sent; one
	// floods TenantFlood at once under a DelegationQuota of TenantInFlight
	// in every other round; the rest each create TenantRate per second
	// for TenantRun per round, over TenantRounds rounds each way.
	TenantNamespaces int
	TenantRate       float64
	TenantRun        time.Duration
	TenantRounds     int
	TenantBacklog    int
	TenantFlood      int
	TenantInFlight   int
	TenantPlaces     int
	TenantHold       time.Duration
	// Out receives table.txt, results.csv and results.png.
	Out string
	// OperatorEnv is added to the operator's environment.
	OperatorEnv []string
	// Rows names the parts to run (dispatch, throughput, cascade, leases,
	// settle, leak, heap (smoke only), node, tracing, faults, hostile,
	// tenants, shards);
	// empty runs them all.
	Rows []string
}

func sizesFromEnv(t *testing.T) sizes {
	s := sizes{DispatchN: 20, DispatchRate: 20, ThroughputN: 20, CascadeN: 20, LeasesN: 20,
		LeaseTTL: 3 * time.Second, Hold: 2 * time.Second, HungN: 4, SettleN: 5, SettleRun: 500 * time.Millisecond, LeakN: 20,
		QPS: 200, Burst: 300, Wait: 2 * time.Minute, ShardsN: 30, ShardSettle: time.Second, FailoverN: 10,
		ShardLeasesN: 30, ShardLeaseTTL: 3 * time.Second,
		FaultN: 20, FaultRates: []float64{0.3}, FaultSeeds: 1, FaultKills: 1, FaultTimeout: 3 * time.Minute,
		HostileAgents: 2, HostileTasks: 8,
		TenantNamespaces: 20, TenantRate: 0.1, TenantRun: 10 * time.Second, TenantRounds: 1, TenantBacklog: 20, TenantFlood: 40,
		TenantInFlight: 2, TenantPlaces: 8, TenantHold: 2 * time.Second}
	if os.Getenv("BENCH_SCALE") == "full" {
		s = sizes{Full: true, DispatchN: 1000, DispatchRate: 25, ThroughputN: 5000, CascadeN: 1000, LeasesN: 10000,
			LeaseTTL: 30 * time.Second, Hold: 2 * time.Minute, HungN: 8, SettleN: 100, SettleRun: 500 * time.Millisecond, LeakN: 10000,
			QPS: 200, Burst: 300, Wait: 15 * time.Minute, ShardsN: 10000, ShardSettle: time.Minute, FailoverN: 300,
			ShardLeasesN: 20000, ShardLeaseTTL: time.Minute,
			FaultN: 200, FaultRates: []float64{0.3, 0.5}, FaultSeeds: 5, FaultKills: 3, FaultTimeout: 5 * time.Minute,
			HostileAgents: 8, HostileTasks: 64,
			TenantNamespaces: 20, TenantRate: 0.1, TenantRun: time.Minute, TenantRounds: 2, TenantBacklog: 50, TenantFlood: 300,
			TenantInFlight: 2, TenantPlaces: 8, TenantHold: 2 * time.Second}
	}
	envInt(t, "BENCH_DISPATCH_N", &s.DispatchN)
	envFloat(t, "BENCH_DISPATCH_RATE", &s.DispatchRate)
	envInt(t, "BENCH_THROUGHPUT_N", &s.ThroughputN)
	envInt(t, "BENCH_CASCADE_N", &s.CascadeN)
	envInt(t, "BENCH_LEASES_N", &s.LeasesN)
	envDuration(t, "BENCH_LEASE_TTL", &s.LeaseTTL)
	envDuration(t, "BENCH_HOLD", &s.Hold)
	envInt(t, "BENCH_HUNG_N", &s.HungN)
	envInt(t, "BENCH_LEASE_CALLS", &s.LeaseCalls)
	envInt(t, "BENCH_SETTLE_N", &s.SettleN)
	envDuration(t, "BENCH_SETTLE_RUN", &s.SettleRun)
	envInt(t, "BENCH_LEAK_N", &s.LeakN)
	envFloat(t, "BENCH_QPS", &s.QPS)
	envInt(t, "BENCH_BURST", &s.Burst)
	envDuration(t, "BENCH_WAIT", &s.Wait)
	envInt(t, "BENCH_SHARDS_N", &s.ShardsN)
	envDuration(t, "BENCH_SHARD_SETTLE", &s.ShardSettle)
	envInt(t, "BENCH_FAILOVER_N", &s.FailoverN)
	envInt(t, "BENCH_SHARD_LEASES_N", &s.ShardLeasesN)
	envDuration(t, "BENCH_SHARD_LEASE_TTL", &s.ShardLeaseTTL)
	envInt(t, "BENCH_FAULT_N", &s.FaultN)
	envRates(t, "BENCH_FAULT_RATES", &s.FaultRates)
	envInt(t, "BENCH_FAULT_SEEDS", &s.FaultSeeds)
	envInt(t, "BENCH_FAULT_KILLS", &s.FaultKills)
	envDuration(t, "BENCH_FAULT_TIMEOUT", &s.FaultTimeout)
	envInt(t, "BENCH_HOSTILE_AGENTS", &s.HostileAgents)
	envInt(t, "BENCH_HOSTILE_TASKS", &s.HostileTasks)
	envInt(t, "BENCH_TENANT_NAMESPACES", &s.TenantNamespaces)
	envFloat(t, "BENCH_TENANT_RATE", &s.TenantRate)
	envDuration(t, "BENCH_TENANT_RUN", &s.TenantRun)
	envInt(t, "BENCH_TENANT_ROUNDS", &s.TenantRounds)
	envInt(t, "BENCH_TENANT_BACKLOG", &s.TenantBacklog)
	envInt(t, "BENCH_TENANT_FLOOD", &s.TenantFlood)
	envInt(t, "BENCH_TENANT_INFLIGHT", &s.TenantInFlight)
	envInt(t, "BENCH_TENANT_PLACES", &s.TenantPlaces)
	envDuration(t, "BENCH_TENANT_HOLD", &s.TenantHold)
	if s.TenantNamespaces < 4 {
		t.Fatalf("BENCH_TENANT_NAMESPACES=%d: want at least 4 (two floods, one at quota, one steady)", s.TenantNamespaces)
	}
	s.Out = os.Getenv("BENCH_OUT")
	for part := range strings.SplitSeq(os.Getenv("BENCH_ROWS"), ",") {
		if part = strings.TrimSpace(part); part != "" {
			s.Rows = append(s.Rows, part)
		}
	}
	return s
}

func envInt(t *testing.T, name string, v *int) {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", name, s)
		}
		*v = n
	}
}

func envFloat(t *testing.T, name string, v *float64) {
	if s := os.Getenv(name); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			t.Fatalf("%s=%q: want a positive number", name, s)
		}
		*v = f
	}
}

func envDuration(t *testing.T, name string, v *time.Duration) {
	if s := os.Getenv(name); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 30s", name, s)
		}
		*v = d
	}
}

// envRates reads a comma-separated list of shares in (0, 1].
func envRates(t *testing.T, name string, v *[]float64) {
	s := os.Getenv(name)
	if s == "" {
		return
	}
	var rates []float64
	for part := range strings.SplitSeq(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || f <= 0 || f > 1 {
			t.Fatalf("%s=%q: want shares in (0, 1] such as 0.3,0.5", name, s)
		}
		rates = append(rates, f)
	}
	*v = rates
}
