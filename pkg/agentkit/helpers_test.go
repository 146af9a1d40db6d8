/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"iter"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2aext"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Names the tests share.
const (
	tokens      = "tokens"
	calls       = "calls"
	ns          = "team"
	workerAgent = "worker"
)

// childA is the name of orch's child with key "a".
var childA = ChildName("orch", "a")

// agentFn is the body of a test agent, after the task was created.
type agentFn = func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool)

// fnExec creates the task, then runs fn. It records what the kit handed it.
type fnExec struct {
	fn      agentFn
	calls   atomic.Int32
	stopped chan struct{} // closed when an execution's context ended
	once    sync.Once
}

func newExec(fn agentFn) *fnExec {
	return &fnExec{fn: fn, stopped: make(chan struct{})}
}

func (f *fnExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		f.calls.Add(1)
		go func() {
			<-ctx.Done()
			f.once.Do(func() { close(f.stopped) })
		}()
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		f.fn(ctx, ec, yield)
	}
}

func (f *fnExec) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// blockUntilDone is an agent that works until its context ends.
func blockUntilDone(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	<-ctx.Done()
}

type testAgent struct {
	srv    *Server
	url    string
	plain  *a2aclient.Client // sends no extension header
	leased *a2aclient.Client // activates the lease extension on every call
	clock  *clocktesting.FakePassiveClock
}

func startAgent(t *testing.T, exec a2asrv.AgentExecutor, opts ...Option) *testAgent {
	t.Helper()
	g := NewWithT(t)
	clock := clocktesting.NewFakePassiveClock(time.Now())
	opts = append([]Option{WithClock(clock), WithSweepInterval(20 * time.Millisecond)}, opts...)
	srv := NewServer(&a2a.AgentCard{
		Name: "test", Description: "test agent", Version: "1",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
	}, exec, opts...)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})

	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, hs.URL)
	g.Expect(err).NotTo(HaveOccurred())
	plain, err := a2aclient.NewFromCard(ctx, card)
	g.Expect(err).NotTo(HaveOccurred())
	leased, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithCallInterceptors(a2aext.NewActivator(tethera2a.LeaseExtensionURI)))
	g.Expect(err).NotTo(HaveOccurred())
	return &testAgent{srv: srv, url: hs.URL, plain: plain, leased: leased, clock: clock}
}

// send starts a task without waiting for it, with meta as message metadata.
func (a *testAgent) send(ctx context.Context, text string, meta map[string]any) (*a2a.Task, error) {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.Metadata = meta
	res, err := a.leased.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: msg,
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	if err != nil {
		return nil, err
	}
	return res.(*a2a.Task), nil
}

func (a *testAgent) get(ctx context.Context, c *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
	if err != nil {
		return nil
	}
	return t
}

func leaseMeta(ttlSeconds float64) map[string]any {
	return map[string]any{tethera2a.LeaseExtensionURI: map[string]any{"ttlSeconds": ttlSeconds}}
}

func budgetMeta(meters map[string]int64, deadline *time.Time) map[string]any {
	req := tethera2a.BudgetRequestMetadata{Meters: meters, Deadline: deadline}
	return map[string]any{tethera2a.BudgetExtensionURI: toMeta(req)}
}

func expiresAt(t *a2a.Task) time.Time {
	var g tethera2a.LeaseGrantMetadata
	if t == nil || fromMeta(t.Metadata[tethera2a.LeaseExtensionURI], &g) != nil {
		return time.Time{}
	}
	return g.ExpiresAt
}

func budgetReport(meta map[string]any) *tethera2a.BudgetReportMetadata {
	raw, ok := meta[tethera2a.BudgetExtensionURI]
	if !ok {
		return nil
	}
	var r tethera2a.BudgetReportMetadata
	if fromMeta(raw, &r) != nil {
		return nil
	}
	return &r
}

func statusText(t *a2a.Task) string {
	if t == nil || t.Status.Message == nil {
		return ""
	}
	var s string
	for _, p := range t.Status.Message.Parts {
		s += p.Text()
	}
	return s
}

func failureClass(t *a2a.Task) string {
	if t == nil || t.Status.Message == nil {
		return ""
	}
	c, _ := t.Status.Message.Metadata[tethera2a.FailureClassMetadataKey].(string)
	return c
}
