/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"iter"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tether-dev/tether/pkg/agentkit"
	"github.com/tether-dev/tether/test/agentcalls"
)

// recordingAgent is an agentkit server (leases honoured: a lapsed one
// cancels its task) on loopback that notes every call: SendMessage per
// message id, lease renewals and CancelTask per task id. A task whose text
// starts with "hold" runs until release() and then succeeds; any other runs
// until cancelled.
type recordingAgent struct {
	srv     *agentkit.Server
	hs      *httptest.Server
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	sends    map[string]int         // message id → SendMessage calls
	renewals map[string][]time.Time // task id → renewing GetTask calls
	cancels  map[string]int         // task id → CancelTask calls
	lapsed   map[string]bool        // task id → cancelled by its lease lapsing
}

func newRecordingAgent() *recordingAgent {
	a := &recordingAgent{release: make(chan struct{}), sends: map[string]int{},
		renewals: map[string][]time.Time{}, cancels: map[string]int{}, lapsed: map[string]bool{}}
	card := &a2a.AgentCard{Name: "recording-agent", Description: "notes every call", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	a.srv = agentkit.NewServer(card, recordingExecutor{a}, agentkit.WithLogger(slog.New(slog.DiscardHandler)))
	a.hs = httptest.NewServer(agentcalls.Record(a.srv, a.note))
	return a
}

func (a *recordingAgent) URL() string { return a.hs.URL }

func (a *recordingAgent) Close() {
	a.releaseAll()
	a.hs.CloseClientConnections()
	a.hs.Close()
	a.srv.Close()
}

// releaseAll lets every "hold" task succeed.
func (a *recordingAgent) releaseAll() { a.once.Do(func() { close(a.release) }) }

func (a *recordingAgent) note(c agentcalls.Call) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch c.Method {
	case "SendMessage":
		a.sends[c.MessageID]++
	case "GetTask":
		if c.Lease {
			a.renewals[c.TaskID] = append(a.renewals[c.TaskID], c.At)
		}
	case "CancelTask":
		a.cancels[c.TaskID]++
	}
}

// duplicateSends lists the message ids sent more than once.
func (a *recordingAgent) duplicateSends() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for id, n := range a.sends {
		if n > 1 {
			out[id] = n
		}
	}
	return out
}

func (a *recordingAgent) sendCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sends)
}

func (a *recordingAgent) renewalsOf(task string) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.renewals[task]...)
}

func (a *recordingAgent) cancelled(task string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancels[task] > 0
}

func (a *recordingAgent) lapsedTasks() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.lapsed))
	for id := range a.lapsed {
		out = append(out, id)
	}
	return out
}

type recordingExecutor struct{ a *recordingAgent }

func (x recordingExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		hold := ec.Message != nil && len(ec.Message.Parts) > 0 && strings.HasPrefix(ec.Message.Parts[0].Text(), "hold")
		release := x.a.release
		if !hold {
			release = nil // until cancelled
		}
		select {
		case <-release:
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("held and done")), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		case <-ctx.Done(): // cancelled by the operator, or its lease lapsed
			id := string(ec.TaskID)
			x.a.mu.Lock()
			if x.a.cancels[id] == 0 { // no CancelTask came (it is noted before it is served)
				x.a.lapsed[id] = true
			}
			x.a.mu.Unlock()
		}
	}
}

// Cancel adds nothing: the kit ends the task Canceled.
func (recordingExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}
