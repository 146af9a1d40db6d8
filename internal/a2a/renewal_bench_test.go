/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// runningTaskJSON is a running task with a lease, as an agent reports it.
const runningTaskJSON = `{"id":"t-1","contextId":"tether-ctx","status":{"state":"TASK_STATE_WORKING"},` +
	`"metadata":{"https://tether.dev/a2a/ext/lease/v1":{"expiresAt":"2026-12-03T12:00:00Z","ttlSeconds":30}}}`

// renewalAgent answers every call with answer, prepared once.
func renewalAgent(b *testing.B, answer []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkRenewal is one lease renewal (GetTask with the lease extension,
// no history) over JSON-RPC against a loopback agent that answers with
// bytes prepared once: what it costs is the client's side and the round
// trip.
func BenchmarkRenewal(b *testing.B) {
	srv := renewalAgent(b, []byte(`{"jsonrpc":"2.0","id":"1","result":`+runningTaskJSON+`}`))
	c, err := NewClient(context.Background(), Endpoint{URL: srv.URL}, cardOf(bindJSONRPC, srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ctx := context.Background()
	b.ReportAllocs()
	withCPU(b, func() {
		if _, err := c.Get(ctx, "t-1", true); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkRenewalFloor is what BenchmarkRenewal stands on, each against
// the same kind of loopback agent: a bare net/http POST of a GetTask
// request prepared once (the HTTP/1.1 round trip alone), a2a-go's client
// over JSON-RPC and over HTTP+JSON with a plain http.Client (the SDK's
// encoding and decoding on top), without this package's layers.
func BenchmarkRenewalFloor(b *testing.B) {
	rpcAnswer := []byte(`{"jsonrpc":"2.0","id":"1","result":` + runningTaskJSON + `}`)
	ctx := context.Background()
	b.Run("http", func(b *testing.B) {
		srv := renewalAgent(b, rpcAnswer)
		request := []byte(`{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t-1","historyLength":0},"id":"1"}`)
		hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
		b.ReportAllocs()
		withCPU(b, func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(request))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		})
	})
	sdk := func(b *testing.B, answer []byte, binding a2a.TransportProtocol, transport func(*http.Client) a2aclient.FactoryOption) {
		srv := renewalAgent(b, answer)
		hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
		iface := &a2a.AgentInterface{URL: srv.URL, ProtocolBinding: binding, ProtocolVersion: a2a.ProtocolVersion(ProtocolV1)}
		c, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface}, a2aclient.WithDefaultsDisabled(), transport(hc))
		if err != nil {
			b.Fatal(err)
		}
		history := 0
		b.ReportAllocs()
		withCPU(b, func() {
			if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "t-1", HistoryLength: &history}); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("a2a-go-jsonrpc", func(b *testing.B) {
		sdk(b, rpcAnswer, a2a.TransportProtocolJSONRPC, a2aclient.WithJSONRPCTransport)
	})
	b.Run("a2a-go-rest", func(b *testing.B) {
		sdk(b, []byte(runningTaskJSON), a2a.TransportProtocolHTTPJSON, a2aclient.WithRESTTransport)
	})
}

// withCPU runs op in the benchmark's loop and reports the process's CPU
// time per op (user and system, the loopback agent's side included).
func withCPU(b *testing.B, op func()) {
	before := processCPU(b)
	n := 0
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(n), "cpu-µs/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
