/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package tracing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

var serviceNameKey = attribute.Key("service.name")

// A Delegation's span is recorded when it settles, possibly by another
// operator process than the one that sent its calls: its ids are derived
// from UIDs, so the call spans made earlier (and by a replica before a
// restart) already name it as their parent.

// TraceIDOf is the trace id of a tree whose root Delegation has this UID.
func TraceIDOf(rootUID string) trace.TraceID {
	sum := sha256.Sum256([]byte("tether trace " + rootUID))
	var id trace.TraceID
	copy(id[:], sum[:])
	return id
}

// SpanIDOf is the span id of the Delegation with this UID.
func SpanIDOf(uid string) trace.SpanID {
	sum := sha256.Sum256([]byte("tether span " + uid))
	var id trace.SpanID
	copy(id[:], sum[:])
	return id
}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type fixedIDsKey struct{}

// withIDs makes the next span started from ctx take these ids (the trace id
// only for a root span; a child keeps its parent's).
func withIDs(ctx context.Context, traceID trace.TraceID, spanID trace.SpanID) context.Context {
	return context.WithValue(ctx, fixedIDsKey{}, fixedIDs{trace: traceID, span: spanID})
}

// idGenerator gives spans the ids withIDs asked for, and random ones otherwise.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return f.trace, f.span
	}
	var t trace.TraceID
	var s trace.SpanID
	_, _ = rand.Read(t[:])
	_, _ = rand.Read(s[:])
	return t, s
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return f.span
	}
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
