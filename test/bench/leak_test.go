/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// heapSlackMiB is what the live heap may grow by beyond 10% after a churn
// in the test: the operator's own first-use allocations that are not kept
// per Delegation (the Agent's client and pool, HTTP/2 buffers, the
// workqueue's and informer's ring buffers at their working size, the
// metric series of the namespace). It is measured after a warm-up round, so
// it is small; a leak of ~100 bytes per Delegation of the churn already
// shows beyond it.
const heapSlackMiB = 2

// heapReading is the operator's live heap: the in-use bytes of its heap
// profile taken right after a full collection (gc=1), and how much of it
// the profile puts on client-go's events broadcaster, which keeps every
// Event it recorded for 6 to 12 minutes to fold repeats into a series
// (tools/events: finishSeries) and then drops it. The profile's HeapAlloc
// (its debug form) is not used: it is read after the profile's records
// were fetched and formatted, which allocates megabytes between the
// collection and the reading, more the longer the operator ran.
type heapReading struct {
	LiveMiB   float64
	EventsMiB float64
}

// Own is the live heap without the broadcaster's Events.
func (h heapReading) Own() float64 { return h.LiveMiB - h.EventsMiB }

func (e *env) heap() heapReading {
	e.t.Helper()
	var h heapReading
	e.heapProfile("debug=0", func(r io.Reader) error {
		p, err := profile.Parse(r)
		if err != nil {
			return err
		}
		inuse := slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == "inuse_space" })
		if inuse < 0 {
			return errors.New("no inuse_space in the heap profile")
		}
		for _, smp := range p.Sample {
			mib := float64(smp.Value[inuse]) / (1 << 20)
			h.LiveMiB += mib
			if slices.ContainsFunc(smp.Location, func(l *profile.Location) bool {
				return slices.ContainsFunc(l.Line, func(ln profile.Line) bool {
					return ln.Function != nil && strings.HasPrefix(ln.Function.Name, "k8s.io/client-go/tools/events.")
				})
			}) {
				h.EventsMiB += mib
			}
		}
		return nil
	})
	return h
}

// heapProfile reads the operator's heap profile after a full collection.
func (e *env) heapProfile(format string, read func(io.Reader) error) {
	e.t.Helper()
	resp, err := http.Get("http://" + e.pprof + "/debug/pprof/heap?gc=1&" + format)
	must(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("heap profile: %s", resp.Status)
	}
	must(e.t, read(resp.Body))
}

// churn creates n quick Delegations in ns, waits until they all Succeeded
// and deletes them; false when not all settled within the wait.
func (e *env) churn(ns, prefix string, n int) bool {
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = delegation(ns, fmt.Sprintf("%s-%05d", prefix, i), "quick")
	}
	e.createAll(objs)
	succeeded := func() int { return e.seen.count(ns, phaseIs(v1alpha1.PhaseSucceeded)) }
	settled := e.tryUntil(e.sz.Wait, func() bool { return succeeded() == n })
	if !settled {
		e.t.Logf("churn: only %d of %d Succeeded within %s", succeeded(), n, e.sz.Wait)
	}
	e.deleteAll(ns)
	return settled
}

// liveHeap is the leak check of `make test` (the heap phase of the smoke):
// after LEAK_TEST_N Delegations (default 200) were created, settled and
// deleted, the operator's live heap is within 10% (+ heapSlackMiB) of where
// it was before. A warm-up round first makes what the operator allocates
// once (per Agent, per namespace) part of the baseline. The smoke's
// operator samples its heap finely (memprofilerateEnv), so the
// broadcaster's share is measured, not guessed. The bench's leak row
// measures RSS over a churn of 10,000.
func (e *env) liveHeap() []row {
	t := e.t
	n := 200
	if s := os.Getenv("LEAK_TEST_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("LEAK_TEST_N=%q: want a positive integer", s)
		}
	}
	ag := newBenchAgent()
	defer ag.Close()
	ns := e.tenant("heap", ag.URL(), pollEvery(time.Second))
	if !e.churn(ns, "warm", 50) {
		t.Fatal("the warm-up Delegations did not all settle")
	}
	before, rssBefore := e.heap(), e.usage(e.operator)
	if !e.churn(ns, "churn", n) {
		t.Fatal("the churned Delegations did not all settle")
	}
	after, rssAfter := e.heap(), e.usage(e.operator)
	e.profile("heap", "operator-heap-after-churn.pprof")
	t.Logf("operator live heap before: %.2f MiB (%.2f MiB of it Events the broadcaster keeps), after %d Delegations were created, settled and deleted: %.2f MiB (%.2f MiB Events)",
		before.LiveMiB, before.EventsMiB, n, after.LiveMiB, after.EventsMiB)
	if limit := 1.1*before.Own() + heapSlackMiB; after.Own() > limit {
		t.Errorf("live heap without the broadcaster's Events %.2f MiB after the churn, more than %.2f MiB (110%% of %.2f MiB + %d MiB); heap profile in %s (BENCH_OUT keeps it)",
			after.Own(), limit, before.Own(), heapSlackMiB, e.out)
	}
	// The broadcaster drops an Event 6 to 12 minutes after it was recorded:
	// what it holds is bounded by the Events of that window, not by every
	// Delegation ever seen; a few KiB each.
	if perDelegation := (after.EventsMiB - before.EventsMiB) * (1 << 20) / float64(n); perDelegation > 8<<10 {
		t.Errorf("the events broadcaster holds %.0f bytes per churned Delegation", perDelegation)
	}
	// The smoke's leak rows come from this churn (the leak phase measures
	// them at full size, after quiet spells).
	return churnRows(n, rssBefore, rssAfter, before, after)
}

// churnRows are the leak rows: the operator's RSS and live heap after n
// Delegations were created, settled and deleted, against before.
func churnRows(n int, rssBefore, rssAfter usage, heapBefore, heapAfter heapReading) []row {
	return []row{
		{Name: "operator RSS after churn", Unit: "MiB", Value: rssAfter.RSSMiB, Floor: rssBefore.RSSMiB,
			FloorOf: fmt.Sprintf("operator RSS before %d Delegations were created, settled and deleted", n),
			Target:  "≤ 1.1× floor", Met: ratioAtMost(1.1)},
		{Name: "operator live heap after churn", Unit: "MiB", Value: heapAfter.Own(), Floor: heapBefore.Own(),
			FloorOf: fmt.Sprintf("live heap before the %d (both without the Events client-go keeps)", n),
			Target:  "≤ 1.1× floor", Met: ratioAtMost(1.1)},
	}
}

// memprofilerateEnv has the operator sample one allocation per 4 KiB: the
// smoke's heap check reads the profile; the full bench keeps the default,
// which costs nothing measurable.
const memprofilerateEnv = "GODEBUG=memprofilerate=4096"
