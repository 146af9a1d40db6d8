/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/tracing"
)

// The operator sends W3C trace context (traceparent) with every call. The
// kit continues it: the task runs in a span of the agent's (on the global
// OpenTelemetry provider the agent installs; without one the context still
// passes through), and the children Delegate creates carry that span in
// their traceparent annotation, so the whole tree is one trace.

const tracerName = "github.com/tether-dev/tether/pkg/agentkit"

// withIncomingTrace reads the caller's trace context from the request headers.
func withIncomingTrace(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(tracing.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		h.ServeHTTP(w, r)
	})
}

// startTaskSpan starts the span a task runs in, a child of the caller's:
// the traceparent header's or, without one (a proxy dropped it, a binding
// that has no headers), the one the message metadata carries under the
// trace-context extension the kit's card declares.
func startTaskSpan(ctx context.Context, ec *a2asrv.ExecutorContext) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = withMetadataTrace(ctx, ec)
	}
	return otel.Tracer(tracerName).Start(ctx, "agent task", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("a2a.task_id", string(ec.TaskID)), attribute.String("a2a.context_id", ec.ContextID)))
}

// withMetadataTrace continues the trace context a client put in the
// message (or request) metadata under TraceContextExtensionURI; ctx is
// returned as it is when there is none or it does not parse.
func withMetadataTrace(ctx context.Context, ec *a2asrv.ExecutorContext) context.Context {
	raw, ok := extensionData(ec.Message, ec.Metadata, tethera2a.TraceContextExtensionURI)
	if !ok {
		return ctx
	}
	var tc tethera2a.TraceContextMetadata
	if fromMeta(raw, &tc) != nil || tc.Traceparent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": tc.Traceparent}
	if tc.Tracestate != "" {
		carrier["tracestate"] = tc.Tracestate
	}
	return tracing.Propagator().Extract(ctx, carrier)
}
