/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Call describes one A2A call for its span.
type Call struct {
	// Parent is the span context of the calling Delegation (Of).
	Parent trace.SpanContext
	// Op is send, read, renewal, reply, cancel or list.
	Op         string
	Agent      string
	Delegation string
	TaskID     string
}

// StartCall starts the span of one call as a child of its Delegation's; the
// returned context carries it to the wire (traceparent). The span is nil
// when tracing is off.
func StartCall(ctx context.Context, c Call) (context.Context, trace.Span) {
	if !On() || !c.Parent.IsValid() {
		return ctx, nil
	}
	ctx = trace.ContextWithRemoteSpanContext(ctx, c.Parent)
	attrs := []attribute.KeyValue{
		attribute.String("tether.agent", c.Agent),
		attribute.String("tether.delegation", c.Delegation),
		attribute.String("rpc.system", "a2a"),
	}
	if c.TaskID != "" {
		attrs = append(attrs, attribute.String("a2a.task_id", c.TaskID))
	}
	return Tracer().Start(ctx, "A2A "+c.Op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndCall ends a call's span with the task id the answer named (if the call
// had none) and its outcome: ok, refused or transport, as the call metrics.
func EndCall(span trace.Span, taskID, outcome string, err error) {
	if span == nil {
		return
	}
	if taskID != "" {
		span.SetAttributes(attribute.String("a2a.task_id", taskID))
	}
	span.SetAttributes(attribute.String("tether.outcome", outcome))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
