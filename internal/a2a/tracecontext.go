/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
)

// traceContextOf is the W3C trace context of the call's span in ctx; false
// when ctx carries none (tracing off).
func traceContextOf(ctx context.Context) (TraceContextMetadata, bool) {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	tc := TraceContextMetadata{Traceparent: carrier["traceparent"], Tracestate: carrier["tracestate"]}
	return tc, tc.Traceparent != ""
}

// traceContextMeta returns meta with the call's trace context added under
// TraceContextExtensionURI when the card asks for it (the headers carry it
// in every case), and whether it was added. meta itself is not changed.
func (c *client) traceContextMeta(ctx context.Context, meta map[string]any) (map[string]any, bool) {
	if !c.card.TraceContext {
		return meta, false
	}
	tc, ok := traceContextOf(ctx)
	if !ok {
		return meta, false
	}
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]any{}
	}
	// Plain JSON values: the gRPC binding's Struct cannot hold Go structs.
	v := map[string]any{"traceparent": tc.Traceparent}
	if tc.Tracestate != "" {
		v["tracestate"] = tc.Tracestate
	}
	out[TraceContextExtensionURI] = v
	return out, true
}
