/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package tracingtest turns tracing on for a test process with every span
// kept in memory, for the tests of the operator and of agentkit alike.
package tracingtest

import (
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tether-dev/tether/internal/tracing"
)

var (
	once  sync.Once
	spans *tracetest.InMemoryExporter
)

// RecordSpans installs, once per process, a global provider that samples
// every span and keeps it in memory, and returns where they are kept.
// Parallel tests' spans land there too: each test reads its own trace.
func RecordSpans() *tracetest.InMemoryExporter {
	once.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		tracing.Install(tracing.NewProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample())))
	})
	return spans
}
