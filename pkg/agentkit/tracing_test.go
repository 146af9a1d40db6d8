/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/tracing/tracingtest"
)

// completes finishes every task at once.
func completes(_ context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
}

// taskSpan is the exported "agent task" span of a task.
func taskSpan(g Gomega, exp *tracetest.InMemoryExporter, id a2a.TaskID) tracetest.SpanStub {
	var found tracetest.SpanStub
	g.Eventually(func() bool {
		for _, s := range exp.GetSpans() {
			for _, kv := range s.Attributes {
				if s.Name == "agent task" && kv.Key == "a2a.task_id" && kv.Value.AsString() == string(id) {
					found = s
					return true
				}
			}
		}
		return false
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	return found
}

func traceMeta(traceparent string) map[string]any {
	return map[string]any{tethera2a.TraceContextExtensionURI: map[string]any{"traceparent": traceparent}}
}

// The kit's card asks for the trace context in the metadata, and a task
// whose request carries no traceparent header continues the one there.
func TestTaskContinuesTheTraceOfTheMessageMetadata(t *testing.T) {
	g := NewWithT(t)
	exp := tracingtest.RecordSpans()
	a := startAgent(t, newExec(completes))
	g.Expect(a.srv.Kit.Extensions()).To(ContainElement(HaveField("URI", tethera2a.TraceContextExtensionURI)))

	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	task, err := a.send(context.Background(), "go", traceMeta(caller))
	g.Expect(err).NotTo(HaveOccurred())

	s := taskSpan(g, exp, task.ID)
	g.Expect(s.SpanContext.TraceID().String()).To(Equal("0af7651916cd43dd8448eb211c80319c"))
	g.Expect(s.Parent.SpanID().String()).To(Equal("b7ad6b7169203331"))
	g.Expect(s.Parent.IsRemote()).To(BeTrue())
}

// With both, the header wins: it is the hop that reached the agent (a
// traced proxy on the way replaces it with its own span).
func TestTraceparentHeaderWinsOverTheMetadata(t *testing.T) {
	g := NewWithT(t)
	exp := tracingtest.RecordSpans()
	a := startAgent(t, newExec(completes))

	const header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const meta = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := a2aclient.AttachServiceParams(context.Background(), a2aclient.ServiceParams{"traceparent": {header}})
	task, err := a.send(ctx, "go", traceMeta(meta))
	g.Expect(err).NotTo(HaveOccurred())

	s := taskSpan(g, exp, task.ID)
	g.Expect(s.SpanContext.TraceID().String()).To(Equal("4bf92f3577b34da6a3ce929d0e0e4736"))
	g.Expect(s.Parent.SpanID().String()).To(Equal("00f067aa0ba902b7"))
}

// A malformed value starts a trace of the agent's own instead of failing the task.
func TestMalformedMetadataTraceparentIsIgnored(t *testing.T) {
	g := NewWithT(t)
	exp := tracingtest.RecordSpans()
	a := startAgent(t, newExec(completes))
	task, err := a.send(context.Background(), "go", traceMeta("not-a-traceparent"))
	g.Expect(err).NotTo(HaveOccurred())
	s := taskSpan(g, exp, task.ID)
	g.Expect(s.Parent.IsValid()).To(BeFalse())
	g.Expect(s.SpanContext.TraceFlags() & trace.FlagsSampled).To(Equal(trace.FlagsSampled))
}
