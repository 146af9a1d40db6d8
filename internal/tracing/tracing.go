/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package tracing follows a delegation tree as one OpenTelemetry trace: a
// span per Delegation (from created to settled), a child span per A2A call,
// and W3C trace context on every call, so the agent's own spans, and the
// child Delegations it creates through agentkit, join the same trace.
//
// It is off unless the standard OTEL_* environment asks for traces
// (OTEL_TRACES_EXPORTER=otlp, or an OTEL_EXPORTER_OTLP_ENDPOINT): then spans
// are exported over OTLP/gRPC, sampled by OTEL_TRACES_SAMPLER, described by
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope names tether's tracer.
const Scope = "github.com/tether-dev/tether"

// on is set once a provider of this package is installed: until then the
// operator spends nothing on traces (no ancestor look-ups, no spans).
var on atomic.Bool

// On reports whether traces are recorded.
func On() bool { return on.Load() }

// Tracer is tether's tracer on the global provider.
func Tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(Scope) }

// Propagator is the W3C trace context propagator the calls carry.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// Install makes tp the global provider and turns tracing on. Setup uses it;
// tests install a provider with an in-memory exporter.
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	on.Store(true)
}

// NewProvider is an SDK provider that can give a Delegation's span the ids
// derived from its UID (see WithIDs); every other span gets random ids.
func NewProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(idGenerator{})}, opts...)...)
}

// Enabled reads the OTEL_* environment: traces are wanted when the SDK is
// not disabled and an OTLP exporter is named or given an endpoint.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "otlp":
		return true
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return false
	}
}

// Setup installs an OTLP/gRPC exporter configured by the OTEL_* environment
// when Enabled; otherwise it does nothing. The returned function flushes and
// stops the exporter.
func Setup(ctx context.Context, serviceName string) (func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return func(context.Context) error { return nil }, nil
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p != "" && p != "grpc" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%s: tether exports traces over grpc only", p)
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" && p != "grpc" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: tether exports traces over grpc only", p)
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
	res, err := resource.New(ctx, resource.WithAttributes(serviceNameKey.String(serviceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	tp := NewProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}
