/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/tether-dev/tether/pkg/agentkit"
	"github.com/tether-dev/tether/test/agentcalls"
)

// benchAgent is an agentkit server (leases honoured, lapsed tasks
// cancelled) on loopback that notes when each call arrives: sends by the
// Delegation named in the text, renewals and cancels by task id. Tasks
// whose text says "quick" complete at once; the others run until cancelled.
// Tasks whose text says "settle" work for settleAfter, then complete, and
// the agent notes when it sent their terminal event. Everything lives in
// memory and costs a goroutine per running task, so 10,000 tasks are cheap.
// Tasks whose text says "hold" are quick ones whose send is answered only
// after hold, so each holds one of the operator's call places that long.
type benchAgent struct {
	srv *agentkit.Server
	hs  *httptest.Server

	mu       sync.Mutex
	sends    map[string]time.Time   // Delegation name → first SendMessage
	started  map[string]time.Time   // task id → when the task started
	renewals map[string][]time.Time // task id → GetTask calls renewing the lease
	cancels  map[string]time.Time   // task id → first CancelTask
	ended    map[string]time.Time   // Delegation name → terminal event of a "settle" task

	settleAfter time.Duration
	// conns counts the connections opened to the agent.
	conns atomic.Int64
	// hold is set before the agent serves its first call.
	hold time.Duration
}

// agentKind says how the bench agent tells the operator a task changed:
// it only answers reads (polled), or its card says it streams, or it
// pushes notifications.
type agentKind int

const (
	polled agentKind = iota
	streaming
	pushing
)

func newBenchAgent() *benchAgent { return newBenchAgentOf(polled, 0) }

// newBenchAgentOf is a bench agent of a kind whose "settle" tasks work for
// settleAfter.
func newBenchAgentOf(kind agentKind, settleAfter time.Duration) *benchAgent {
	a := &benchAgent{sends: map[string]time.Time{}, started: map[string]time.Time{},
		renewals: map[string][]time.Time{}, cancels: map[string]time.Time{}, ended: map[string]time.Time{},
		settleAfter: settleAfter}
	quiet := slog.New(slog.DiscardHandler)
	card := &a2a.AgentCard{Name: "bench-agent", Description: "records when calls arrive", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Capabilities: a2a.AgentCapabilities{Streaming: kind == streaming, PushNotifications: kind == pushing}}
	opts := []agentkit.Option{agentkit.WithLogger(quiet)}
	if kind == pushing {
		// The operator's receiver listens on loopback.
		opts = append(opts, agentkit.WithHandlerOptions(a2asrv.WithPushNotifications(push.NewInMemoryStore(),
			push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true}))))
	}
	a.srv = agentkit.NewServer(card, benchExecutor{a}, opts...)
	a.hs = httptest.NewUnstartedServer(agentcalls.Record(a.srv, a.note))
	a.hs.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			a.conns.Add(1)
		}
	}
	a.hs.Start()
	return a
}

func (a *benchAgent) URL() string { return a.hs.URL }

func (a *benchAgent) Close() {
	a.hs.CloseClientConnections()
	a.hs.Close()
	a.srv.Close()
}

func (a *benchAgent) note(c agentcalls.Call) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch c.Method {
	case "SendMessage":
		for _, text := range c.Texts {
			if name := idOf(text); name != "" {
				if _, ok := a.sends[name]; !ok {
					a.sends[name] = c.At
				}
			}
		}
	case "GetTask":
		if c.Lease {
			a.renewals[c.TaskID] = append(a.renewals[c.TaskID], c.At)
		}
	case "CancelTask":
		if _, ok := a.cancels[c.TaskID]; !ok {
			a.cancels[c.TaskID] = c.At
		}
	}
}

// idOf reads the word "id=NAME" of a message text.
func idOf(text string) string {
	for w := range strings.FieldsSeq(text) {
		if name, ok := strings.CutPrefix(w, "id="); ok {
			return name
		}
	}
	return ""
}

// sendAt is when the first SendMessage for a Delegation arrived.
func (a *benchAgent) sendAt(name string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.sends[name]
	return at, ok
}

func (a *benchAgent) sendCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sends)
}

// sendsWithPrefix counts the Delegations sent whose id starts with prefix.
func (a *benchAgent) sendsWithPrefix(prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for id := range a.sends {
		if strings.HasPrefix(id, prefix) {
			n++
		}
	}
	return n
}

// cancelledTasks counts the tasks that received CancelTask; last is when
// the latest of those first arrived.
func (a *benchAgent) cancelledTasks() (n int, last time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, at := range a.cancels {
		if _, ours := a.started[id]; !ours {
			continue
		}
		n++
		if at.After(last) {
			last = at
		}
	}
	return n, last
}

// endedAt is when the agent sent the terminal event of a Delegation's
// "settle" task.
func (a *benchAgent) endedAt(name string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.ended[name]
	return at, ok
}

// leases copies what the lease analysis needs.
func (a *benchAgent) leases() (map[string]time.Time, map[string][]time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	started := maps.Clone(a.started)
	renewals := make(map[string][]time.Time, len(a.renewals))
	for id, at := range a.renewals {
		renewals[id] = append([]time.Time(nil), at...)
	}
	return started, renewals
}

type benchExecutor struct{ a *benchAgent }

func (x benchExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := textOf(ec.Message)
		if ec.StoredTask == nil {
			x.a.mu.Lock()
			x.a.started[string(ec.TaskID)] = time.Now()
			x.a.mu.Unlock()
			if strings.HasPrefix(text, "hold") { // the send is answered at the first event
				select {
				case <-time.After(x.a.hold):
				case <-ctx.Done():
					return
				}
			}
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if strings.HasPrefix(text, "quick") || strings.HasPrefix(text, "hold") {
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done")), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
			return
		}
		if strings.HasPrefix(text, "settle") {
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			select {
			case <-time.After(x.a.settleAfter):
			case <-ctx.Done():
				return
			}
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done")), nil) {
				return
			}
			x.a.mu.Lock()
			x.a.ended[idOf(text)] = time.Now()
			x.a.mu.Unlock()
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			return
		}
		if yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			<-ctx.Done() // until cancelled, by the operator or a lapsed lease
		}
	}
}

// Cancel adds nothing: the kit ends the task Canceled.
func (benchExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// hungAgent serves a normal card, so its Agent becomes Ready, and then
// accepts every A2A call and never answers it. The operator's ListTasks
// probe after the card read is refused at once (the agent does not list),
// so the Agent is Ready without waiting out the probe's timeout.
type hungAgent struct {
	card  *agentkit.Server
	hs    *httptest.Server
	stop  chan struct{}
	calls atomic.Int64
}

func newHungAgent() *hungAgent {
	h := &hungAgent{stop: make(chan struct{})}
	h.card = agentkit.NewServer(&a2a.AgentCard{Name: "hung-agent", Description: "never answers", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}},
		benchExecutor{}, agentkit.WithLogger(slog.New(slog.DiscardHandler)))
	h.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.card.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "ListTasks" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": "ListTasks is not served"}})
			return
		}
		h.calls.Add(1)
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
	}))
	return h
}

func (h *hungAgent) URL() string { return h.hs.URL }

func (h *hungAgent) Close() {
	close(h.stop)
	h.hs.CloseClientConnections()
	h.hs.Close()
	h.card.Close()
}
