/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// bulkyAnswerBytes is the artifact every answer of the bulky agent carries:
// just under the operator's default 1 MiB response bound, so every answer
// is read in full.
const bulkyAnswerBytes = 1000 << 10

// bulkyAgent is a 1.0 JSON-RPC agent that holds every call for hold and
// then answers it with about 1 MiB: a task that stays working, with one
// big artifact (a ListTasks page holds one such task, of another context).
// CancelTask is answered at once (canceled). It counts the calls it holds at
// once: a held call has its place among the operator's calls in flight.
type bulkyAgent struct {
	hs       *httptest.Server
	hold     time.Duration
	artifact string

	inFlight atomic.Int64
	peak     atomic.Int64
	answered atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
}

func newBulkyAgent(hold time.Duration) *bulkyAgent {
	b := &bulkyAgent{hold: hold, artifact: strings.Repeat("x", bulkyAnswerBytes), stop: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		card := &a2a.AgentCard{Name: "bulky", Description: "answers every call with about 1 MiB", Version: "1",
			SupportedInterfaces: []*a2a.AgentInterface{{URL: b.hs.URL + "/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"}},
			DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(card)
	})
	mux.HandleFunc("POST /rpc", b.serve)
	b.hs = httptest.NewServer(mux)
	return b
}

func (b *bulkyAgent) URL() string { return b.hs.URL }

// Close answers every held call at once and stops the server.
func (b *bulkyAgent) Close() {
	b.stopOnce.Do(func() { close(b.stop) })
	b.hs.CloseClientConnections()
	b.hs.Close()
}

func (b *bulkyAgent) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID      string `json:"id"`
			Message struct {
				MessageID string `json:"messageId"`
				ContextID string `json:"contextId"`
			} `json:"message"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	state := "TASK_STATE_CANCELED"
	if req.Method != "CancelTask" {
		state = "TASK_STATE_WORKING"
		if !b.holdCall(r.Context()) {
			return
		}
	}
	task := func(id, contextID string) map[string]any {
		return map[string]any{"id": id, "contextId": contextID, "status": map[string]any{"state": state},
			"artifacts": []any{map[string]any{"artifactId": "bulk", "parts": []any{map[string]any{"text": b.artifact}}}}}
	}
	var result any
	switch req.Method {
	case "SendMessage":
		result = map[string]any{"task": task("bulky-"+req.Params.Message.MessageID, req.Params.Message.ContextID)}
	case "ListTasks":
		result = map[string]any{"tasks": []any{task("bulky-other", "another-context")}, "pageSize": 1, "totalSize": 1, "nextPageToken": ""}
	default: // GetTask, CancelTask
		result = task(req.Params.ID, "bulky-context")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	b.answered.Add(1)
}

// holdCall holds a call for b.hold, counting it; false when the caller gave up.
func (b *bulkyAgent) holdCall(ctx context.Context) bool {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
	select {
	case <-time.After(b.hold):
	case <-b.stop:
	case <-ctx.Done():
		return false
	}
	return true
}

// watchRSS samples a process's resident memory until stop is called, which
// returns the largest reading.
func watchRSS(ctx context.Context, pid int) (stop func() float64) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		most float64
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := rssMiB(pid); err == nil {
				mu.Lock()
				most = max(most, rss)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// rssMiB reads VmRSS from /proc/<pid>/status.
func rssMiB(pid int) (float64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if field, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(field), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
