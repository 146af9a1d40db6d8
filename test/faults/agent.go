/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package faults

import (
	"bytes"
	"context"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// NamePrefix starts the text of every Delegation of a run; the name follows
// it, so the agent knows which Delegation each task it starts belongs to.
const NamePrefix = "work for "

// Task is one task the agent started.
type Task struct {
	ID, MessageID, ContextID string
	Started                  time.Time
}

// Agent is a2a-go's own request handler and in-memory task store over
// JSON-RPC, as an agent built on the SDK with its defaults serves: nothing
// of tether's agent kit. Its store knows every caller as one user, so
// ListTasks answers (an SDK store without an authenticator refuses it).
// Each task works for the run's work time and then completes.
type Agent struct {
	hs   *httptest.Server
	work time.Duration
	// storeAfter holds each SendMessage that long after it arrived before
	// the SDK takes it (stores its task), whatever the caller does
	// meanwhile: an agent whose executor starts late. waiting counts the
	// sends held now.
	storeAfter time.Duration
	waiting    atomic.Int64
	// failFirst fails the first that many tasks of each context, with
	// failure class Transient: a task the operator retries (spec.retry).
	failFirst int

	mu       sync.Mutex
	contexts map[string]int    // context id → tasks started in it
	tasks    map[string][]Task // Delegation name → the tasks started for it
	public   string            // the address its card names
	// running are the tasks working now (started, not ended nor
	// cancelled); peak is the most that ever worked at once.
	running map[string]bool
	peak    int
}

// NewAgent serves the agent on loopback; each task works for work.
func NewAgent(work time.Duration) *Agent { return NewSlowStoringAgent(work, 0) }

// NewSlowStoringAgent is an agent that stores each task storeAfter after
// its SendMessage arrived.
func NewSlowStoringAgent(work, storeAfter time.Duration) *Agent {
	a := &Agent{work: work, storeAfter: storeAfter, tasks: map[string][]Task{}, contexts: map[string]int{}, running: map[string]bool{}}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "caller", nil },
	})
	handler := a2asrv.NewHandler(executor{a}, a2asrv.WithTaskStore(store))
	mux := http.NewServeMux()
	mux.Handle("/rpc", a.storeLate(a2asrv.NewJSONRPCHandler(handler)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
		func(context.Context) (*a2a.AgentCard, error) {
			return &a2a.AgentCard{Name: "sdk-defaults", Description: "a2a-go's default handler and store", Version: "1",
				DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
				SupportedInterfaces: []*a2a.AgentInterface{{URL: a.publicURL() + "/rpc",
					ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"}},
				Skills: []a2a.AgentSkill{{ID: "work", Name: "work", Description: "works a while", Tags: []string{"test"}}},
			}, nil
		})))
	a.hs = httptest.NewServer(mux)
	a.public = a.hs.URL
	return a
}

// NewFailingAgent is an agent whose first failFirst tasks of each context
// fail (class Transient) after working for work; later ones complete.
func NewFailingAgent(work time.Duration, failFirst int) *Agent {
	a := NewAgent(work)
	a.failFirst = failFirst
	return a
}

// NewProxiedAgent is an agent whose card sends every caller through a
// faulting proxy.
func NewProxiedAgent(work time.Duration, opts Options) (*Agent, *Proxy) {
	a := NewAgent(work)
	p := NewProxy(a.hs.URL, opts)
	a.mu.Lock()
	a.public = p.URL()
	a.mu.Unlock()
	return a, p
}

func (a *Agent) publicURL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.public
}

// storeLate holds SendMessage for storeAfter; the SDK then stores the task
// even when the caller gave up or died meanwhile.
func (a *Agent) storeLate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.storeAfter > 0 && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"method":"SendMessage"`)) {
				a.waiting.Add(1)
				time.Sleep(a.storeAfter)
				a.waiting.Add(-1)
				r = r.WithContext(context.WithoutCancel(r.Context()))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Waiting is how many sends the agent holds before storing their task.
func (a *Agent) Waiting() int64 { return a.waiting.Load() }

// URL is the address its card names for every call.
func (a *Agent) URL() string { return a.publicURL() }

// Close stops the agent.
func (a *Agent) Close() {
	a.hs.CloseClientConnections()
	a.hs.Close()
}

// Tasks is every task started so far, by the Delegation it is for.
func (a *Agent) Tasks() map[string][]Task {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]Task, len(a.tasks))
	for name, ts := range a.tasks {
		out[name] = append([]Task(nil), ts...)
	}
	return out
}

// Running is how many tasks work now, and the most that ever worked at
// once.
func (a *Agent) Running() (now, peak int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.running), a.peak
}

// ended takes a task off the running ones (it ended or was cancelled).
func (a *Agent) ended(id a2a.TaskID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, string(id))
}

type executor struct{ a *Agent }

func (x executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var text strings.Builder
		for _, p := range ec.Message.Parts {
			text.WriteString(p.Text())
		}
		name, _ := strings.CutPrefix(text.String(), NamePrefix)
		x.a.mu.Lock()
		x.a.tasks[name] = append(x.a.tasks[name], Task{ID: string(ec.TaskID), MessageID: ec.Message.ID,
			ContextID: ec.ContextID, Started: time.Now()})
		x.a.contexts[ec.ContextID]++
		fail := x.a.contexts[ec.ContextID] <= x.a.failFirst
		x.a.running[string(ec.TaskID)] = true
		x.a.peak = max(x.a.peak, len(x.a.running))
		x.a.mu.Unlock()
		defer x.a.ended(ec.TaskID)
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) ||
			!yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(x.a.work):
		}
		if fail {
			report := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("busy, try again"))
			report.Metadata = map[string]any{"failureClass": "Transient"}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, report), nil)
			return
		}
		if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done: "+name)), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (x executor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		x.a.ended(ec.TaskID)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
