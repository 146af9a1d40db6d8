/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkRenewal is one lease renewal (GetTask with the lease extension,
// no history) over JSON-RPC against a loopback agent that answers with
// bytes prepared once: what it costs is the client's side and the round
// trip.
func BenchmarkRenewal(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":"1","result":{"id":"t-1","contextId":"tether-ctx","status":{"state":"TASK_STATE_WORKING"},` +
		`"metadata":{"https://tether.dev/a2a/ext/lease/v1":{"expiresAt":"2026-12-03T12:00:00Z","ttlSeconds":30}}}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	c, err := NewClient(context.Background(), Endpoint{URL: srv.URL}, cardOf(bindJSONRPC, srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Get(ctx, "t-1", true); err != nil {
			b.Fatal(err)
		}
	}
}
