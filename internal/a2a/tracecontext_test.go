/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// callSpan starts a span as the agent I/O layer does for each call, on a
// provider that keeps its spans in memory, and returns its traceparent.
func callSpan(t *testing.T) (context.Context, string, *tracetest.InMemoryExporter) {
	t.Helper()
	// The headers are written by the global propagator, as the operator installs it.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "A2A send", trace.WithSpanKind(trace.SpanKindClient))
	t.Cleanup(func() { span.End() })
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return ctx, carrier["traceparent"], exp
}

func (a *testAgent) askForTraceContext() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.traceContext = true
}

func (a *testAgent) cancelMetadata() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.cancelMeta)
}

// An agent whose card declares the trace-context extension gets the call's
// trace context in the message and request metadata of SendMessage and in
// the CancelTask metadata, the extension activated, and the header as well.
func TestTraceContextTravelsInMetadataWhenTheCardAsksForIt(t *testing.T) {
	for _, b := range []string{bindJSONRPC, bindREST, bindGRPC} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			a.askForTraceContext()
			c := dialAgent(t, g, a, a.endpoint())
			g.Expect(c.Card().TraceContext).To(BeTrue())
			ctx, traceparent, exp := callSpan(t)
			g.Expect(traceparent).NotTo(BeEmpty())

			task, err := c.Send(ctx, SendRequest{MessageID: "m-1", Text: "work", Lease: &LeaseRequest{TTL: 30e9}})
			g.Expect(err).NotTo(HaveOccurred())
			send := a.lastRequest()
			g.Expect(send.Header.Get("traceparent")).To(Equal(traceparent))
			g.Expect(a.callsOf("SendMessage")[0].Extensions).To(ConsistOf(LeaseExtensionURI, TraceContextExtensionURI))
			want := HaveKeyWithValue(TraceContextExtensionURI, map[string]any{"traceparent": traceparent})
			g.Eventually(func() []execRecord { return a.execsOf("work") }).Should(HaveLen(1))
			exec := a.execsOf("work")[0]
			g.Expect(exec.MessageMeta).To(want)
			g.Expect(exec.Metadata).To(want)
			g.Expect(exec.MessageMeta).To(HaveKey(LeaseExtensionURI), "the other extensions' data stays")

			_, err = c.Cancel(ctx, task.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.callsOf("CancelTask")[0].Extensions).To(ConsistOf(TraceContextExtensionURI))
			// a2a-go's HTTP+JSON client sends CancelTask without a body and
			// its gRPC server drops the request's metadata: there the
			// header is what the agent gets.
			if b == bindJSONRPC {
				g.Eventually(a.cancelMetadata).Should(ContainElement(want))
			}

			// The metadata names the span the operator exported for the call.
			trace.SpanFromContext(ctx).End()
			g.Expect(exp.GetSpans()).To(HaveLen(1))
			sc := exp.GetSpans()[0].SpanContext
			g.Expect(traceparent).To(Equal("00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"))
		})
	}
}

// Without the declaration the trace context travels in the headers only.
func TestTraceContextStaysInTheHeadersForOtherAgents(t *testing.T) {
	for _, b := range []string{bindJSONRPC, bindGRPC} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			g.Expect(c.Card().TraceContext).To(BeFalse())
			ctx, traceparent, _ := callSpan(t)

			task, err := c.Send(ctx, SendRequest{MessageID: "m-1", Text: "work"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.lastRequest().Header.Get("traceparent")).To(Equal(traceparent))
			g.Expect(a.callsOf("SendMessage")[0].Extensions).To(BeEmpty())
			g.Eventually(func() []execRecord { return a.execsOf("work") }).Should(HaveLen(1))
			exec := a.execsOf("work")[0]
			g.Expect(exec.MessageMeta).NotTo(HaveKey(TraceContextExtensionURI))
			g.Expect(exec.Metadata).NotTo(HaveKey(TraceContextExtensionURI))

			_, err = c.Cancel(ctx, task.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(a.cancelMetadata).Should(HaveLen(1))
			g.Expect(a.cancelMetadata()[0]).NotTo(HaveKey(TraceContextExtensionURI))
		})
	}
}

// Without a span (tracing off) nothing is added, whatever the card says.
func TestNoTraceContextWithoutASpan(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	a.askForTraceContext()
	c := dialAgent(t, g, a, a.endpoint())
	_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.lastRequest().Header.Get("traceparent")).To(BeEmpty())
	g.Expect(a.execsOf("quick")[0].MessageMeta).NotTo(HaveKey(TraceContextExtensionURI))
	g.Expect(a.callsOf("SendMessage")[0].Extensions).To(BeEmpty())
}
