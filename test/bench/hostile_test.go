/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// drippingAgent is a streaming bench agent in front of which every
// SubscribeToTask is answered with the task's state and then one event of
// dripEventBytes, sent slowly: an agent that would have the operator hold
// a large event on every stream it opens.
type drippingAgent struct {
	*benchAgent
	front   *httptest.Server
	streams atomic.Int64
}

// dripEventBytes is the size of the event a dripping agent sends on each
// stream, dripChunk at a time every dripEvery.
const (
	dripEventBytes = 1 << 20
	dripChunk      = 32 << 10
	dripEvery      = 50 * time.Millisecond
)

func newDrippingAgent() *drippingAgent {
	d := &drippingAgent{benchAgent: newBenchAgentOf(streaming, 0)}
	back := d.hs.Config.Handler
	d.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var req struct {
				Method string `json:"method"`
				Params struct {
					ID string `json:"id"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &req) == nil && req.Method == "SubscribeToTask" {
				d.streams.Add(1)
				drip(w, r, req.Params.ID)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		back.ServeHTTP(w, r)
	}))
	return d
}

func (d *drippingAgent) URL() string { return d.front.URL }

func (d *drippingAgent) Close() {
	d.front.CloseClientConnections()
	d.front.Close()
	d.benchAgent.Close()
}

// drip answers a subscription with the task working, then a status event
// padded to dripEventBytes, dripChunk at a time, until the stream is cut.
func drip(w http.ResponseWriter, r *http.Request, taskID string) {
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	status := func(pad string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":"1","result":{"statusUpdate":{"taskId":%q,"contextId":"ctx","status":{"state":"TASK_STATE_WORKING"},"metadata":{"pad":"%s`, taskID, pad)
	}
	if _, err := fmt.Fprintf(w, "data: %s\"}}}}\n\n", status("")); err != nil {
		return
	}
	flush()
	if _, err := io.WriteString(w, "data: "+status("")); err != nil {
		return
	}
	chunk := strings.Repeat("x", dripChunk)
	for sent := 0; sent < dripEventBytes; sent += dripChunk {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(dripEvery):
		}
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
		flush()
	}
	_, _ = io.WriteString(w, "\"}}}}\n\n")
}

// hostileStreams measures the operator while HostileAgents dripping agents
// each stream HostileTasks tasks: its peak RSS (against the chart's 256 MiB
// memory limit) and the renewals of another tenant's LeasesN leased tasks
// held for Hold beside them.
func (e *env) hostileStreams() []row {
	t, ttl := e.t, e.sz.LeaseTTL
	ag := newBenchAgent()
	defer ag.Close()
	leased := e.tenant("steady", ag.URL(), pollEvery(ttl/3))
	objs := make([]client.Object, 0, e.sz.LeasesN)
	for i := range e.sz.LeasesN {
		d := delegation(leased, fmt.Sprintf("l-%05d", i), "forever")
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}
		objs = append(objs, d)
	}
	e.createAll(objs)
	idle := e.usage(e.operator)
	namespaces := make([]string, 0, 1+e.sz.HostileAgents)
	namespaces = append(namespaces, leased)
	drippers := make([]*drippingAgent, 0, e.sz.HostileAgents)
	defer func() { // the deletes cancel tasks at the agents: they go first
		for _, ns := range namespaces {
			e.deleteAll(ns)
		}
		for _, d := range drippers {
			d.Close()
		}
	}()

	objs = objs[:0]
	for a := range e.sz.HostileAgents {
		d := newDrippingAgent()
		drippers = append(drippers, d)
		ns := e.tenant(fmt.Sprintf("drip-%d", a), d.URL(), pollEvery(time.Minute))
		namespaces = append(namespaces, ns)
		for i := range e.sz.HostileTasks {
			objs = append(objs, delegation(ns, fmt.Sprintf("s-%05d", i), "forever"))
		}
	}
	e.createAll(objs)
	running := func() int {
		return e.seen.count("", func(p v1alpha1.Phase) bool { return p == v1alpha1.PhaseRunning })
	}
	want := e.sz.LeasesN + e.sz.HostileAgents*e.sz.HostileTasks
	if !e.tryUntil(e.sz.Wait, func() bool { return running() >= want }) {
		t.Logf("hostile: only %d of %d running within %s", running(), want, e.sz.Wait)
	}

	var peak atomic.Value
	peak.Store(idle)
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if u, err := usageOf(e.operator.Pid()); err == nil && u.RSSMiB > peak.Load().(usage).RSSMiB {
				peak.Store(u)
			}
		}
	})
	from := time.Now()
	time.Sleep(e.sz.Hold)
	to := time.Now()
	close(stop)
	sampled.Wait()
	e.profile("heap", "operator-heap-hostile.pprof")
	started, renewals := ag.leases()
	st := analyseLeases(started, renewals, from, to, ttl)
	var subscriptions int64
	for _, d := range drippers {
		subscriptions += d.streams.Load()
	}
	t.Logf("hostile: %d streams opened at %d dripping agents in %s; peak RSS %.1f MiB (%.1f idle)",
		subscriptions, len(drippers), e.sz.Hold, peak.Load().(usage).RSSMiB, idle.RSSMiB)
	beside := fmt.Sprintf("%d agents dripping 1 MiB events on %d streams each", e.sz.HostileAgents, e.sz.HostileTasks)
	return []row{
		{Name: "operator peak RSS beside dripping streams", Unit: "MiB", Value: peak.Load().(usage).RSSMiB, Floor: idle.RSSMiB,
			FloorOf: "its RSS with the leased tasks alone (" + beside + ")", Target: "< 256 MiB", Met: valueAtMost(255)},
		{Name: "renewal lateness p99 beside dripping streams", Unit: "s", Value: seconds(st.Lateness), FloorOf: "ideal",
			Target: "≤ 1 s", Met: valueAtMost(1)},
		{Name: "lapses beside dripping streams", Unit: "tasks", Value: float64(st.Lapses), FloorOf: "ideal", Target: "0", Met: valueAtMost(0)},
	}
}
