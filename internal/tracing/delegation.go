/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// TraceparentAnnotation carries the W3C traceparent a Delegation's span is
// a child of. agentkit sets it on the children an agent creates (the
// agent's own span); GitOps may set it to join a trace of its own. Without
// it, a child's span is a child of its parent Delegation's.
const TraceparentAnnotation = "delegation.tether.dev/traceparent"

// maxDepth bounds the walk up parentRefs (the operator refuses deeper trees).
const maxDepth = 64

// Annotate returns the annotation value for ctx's span ("" when none).
func Annotate(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	Propagator().Inject(ctx, carrier)
	return carrier["traceparent"]
}

// fromAnnotation is the span context a Delegation's annotation names.
func fromAnnotation(d *v1alpha1.Delegation) trace.SpanContext {
	tp := d.Annotations[TraceparentAnnotation]
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := Propagator().Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// Of is the span context of a Delegation's span and of its parent span
// (invalid for a root): the trace id is the annotation's, else the parent
// Delegation's, else derived from the root's UID; the span id derives from
// the UID. Parents are read from r (the operator's cache).
func Of(ctx context.Context, r client.Reader, d *v1alpha1.Delegation) (self, parent trace.SpanContext) {
	return of(ctx, r, d, 0)
}

func of(ctx context.Context, r client.Reader, d *v1alpha1.Delegation, depth int) (self, parent trace.SpanContext) {
	parent = fromAnnotation(d)
	if !parent.IsValid() && d.Spec.ParentRef != nil && depth < maxDepth {
		p := &v1alpha1.Delegation{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.ParentRef.Name}, p); err == nil {
			parent, _ = of(ctx, r, p, depth+1)
		}
	}
	traceID := TraceIDOf(string(d.UID))
	if parent.IsValid() {
		traceID = parent.TraceID()
	}
	self = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: SpanIDOf(string(d.UID)), TraceFlags: trace.FlagsSampled, Remote: true,
	})
	return self, parent
}

// RecordSettled records a settled Delegation's span, from its creation to
// its completion, under the ids its calls' spans already name.
func RecordSettled(ctx context.Context, r client.Reader, d *v1alpha1.Delegation) {
	if !On() || !d.Status.Phase.Settled() {
		return
	}
	self, parent := Of(ctx, r, d)
	start := d.CreationTimestamp.Time
	end := time.Now()
	if d.Status.CompletionTime != nil {
		end = d.Status.CompletionTime.Time
	}
	sctx := withIDs(trace.ContextWithRemoteSpanContext(context.Background(), parent), self.TraceID(), self.SpanID())
	if !parent.IsValid() {
		sctx = withIDs(context.Background(), self.TraceID(), self.SpanID())
	}
	attrs := []attribute.KeyValue{
		attribute.String("k8s.namespace.name", d.Namespace),
		attribute.String("tether.delegation", d.Name),
		attribute.String("tether.delegation.uid", string(d.UID)),
		attribute.String("tether.phase", string(d.Status.Phase)),
	}
	if agent, ok := d.AgentKey(); ok {
		attrs = append(attrs, attribute.String("tether.agent", agent.String()))
	}
	if d.Status.TaskID != "" {
		attrs = append(attrs, attribute.String("a2a.task_id", d.Status.TaskID))
	}
	if o := d.Status.Outcome; o != nil {
		attrs = append(attrs, attribute.String("tether.reason", o.Reason))
	}
	_, span := Tracer().Start(sctx, "Delegation "+d.Namespace+"/"+d.Name,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if d.Status.Phase == v1alpha1.PhaseFailed {
		msg := ""
		if o := d.Status.Outcome; o != nil {
			msg = o.Reason + ": " + o.Message
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End(trace.WithTimestamp(end))
}
