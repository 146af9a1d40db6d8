/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// tracingOverhead measures what tracing costs a dispatch: the dispatch of
// the dispatch row, run by an operator exporting every span over OTLP/gRPC
// (configured by the OTEL_* environment, as in a cluster) to a collector
// on loopback, beside the same run by an operator with tracing off. The
// rounds alternate off, on, on, off, each with a freshly started operator,
// so a machine that gets busier or quieter during the run weighs on both
// sides alike. The operator of the other rows runs again afterwards.
func (e *env) tracingOverhead() []row {
	t := e.t
	col := startCollector(e)
	var off, on []time.Duration
	rounds := []bool{false, true, true, false}
	if !e.sz.Full {
		rounds = rounds[:2] // the smoke: one round each way
	}
	for round, traced := range rounds {
		var env []string
		prefix := "trace-off"
		if traced {
			env, prefix = col.otelEnv(), "trace-on"
		}
		e.restartOperator(env...)
		sends, _ := e.dispatchLatencies(prefix)
		if traced {
			on = append(on, sends...)
		} else {
			off = append(off, sends...)
		}
		t.Logf("tracing: round %d (tracing %v): dispatch p50 %.1f ms", round+1, traced, millis(percentile(sends, 0.5)))
	}
	// Stopping the traced operator flushed its last spans.
	e.restartOperator()
	if col.spans.Load() == 0 {
		t.Errorf("tracing: the traced operator exported no span: tracing was not on")
	}
	floor := fmt.Sprintf("the same with tracing off (%d rounds of %d each way, alternating; %d spans exported)",
		len(rounds)/2, e.sz.DispatchN, col.spans.Load())
	return []row{
		{Name: "dispatch p50, tracing on", Unit: "ms", Value: millis(percentile(on, 0.5)), Floor: millis(percentile(off, 0.5)),
			FloorOf: floor, Target: "≤ 1.05× floor", Met: ratioAtMost(1.05)},
		{Name: "dispatch p99, tracing on", Unit: "ms", Value: millis(percentile(on, 0.99)), Floor: millis(percentile(off, 0.99)),
			FloorOf: floor},
	}
}

// restartOperator stops the running operator and starts one with env added.
func (e *env) restartOperator(env ...string) {
	if e.operator != nil {
		if err := e.operator.Stop(30 * time.Second); err != nil {
			e.t.Logf("stopping the operator: %v", err)
		}
	}
	e.startOperator(env...)
}

// collector is an OTLP/gRPC trace receiver on loopback that counts the
// spans it is sent and keeps nothing.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	addr  string
	spans atomic.Int64
}

func startCollector(e *env) *collector {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must(e.t, err)
	c := &collector{addr: lis.Addr().String()}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, c)
	go func() { _ = s.Serve(lis) }()
	e.t.Cleanup(s.Stop)
	return c
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// otelEnv is the environment that turns the operator's tracing on and
// points it at the collector (plain text: the http scheme).
func (c *collector) otelEnv() []string {
	return []string{
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.addr,
		"OTEL_SERVICE_NAME=tether-operator-bench",
	}
}
