/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package agentcalls notes the JSON-RPC calls that reach a test agent, for
// the benchmark's and the end-to-end tests' agents alike: each call's
// method, task and message ids, texts, and whether it activated the lease
// extension (a GetTask that does renews the lease).
package agentcalls

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Call is one JSON-RPC call as it arrived.
type Call struct {
	At     time.Time
	Method string
	// TaskID is params.id (GetTask, CancelTask).
	TaskID string
	// MessageID and Texts are the message's (SendMessage).
	MessageID string
	Texts     []string
	// Lease: the call activated the lease extension.
	Lease bool
}

// rpc is the part of a JSON-RPC request a Call is read from.
type rpc struct {
	Method string `json:"method"`
	Params struct {
		ID      string `json:"id"`
		Message struct {
			MessageID string `json:"messageId"`
			Parts     []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

// Record hands every JSON-RPC call to note before next serves it.
func Record(next http.Handler, note func(Call)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req rpc
			if json.Unmarshal(body, &req) == nil {
				c := Call{At: now, Method: req.Method, TaskID: req.Params.ID, MessageID: req.Params.Message.MessageID,
					Lease: LeaseActivated(r)}
				for _, p := range req.Params.Message.Parts {
					c.Texts = append(c.Texts, p.Text)
				}
				note(c)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// LeaseActivated reports a request that activates the lease extension.
func LeaseActivated(r *http.Request) bool {
	for _, h := range []string{"A2A-Extensions", "X-A2A-Extensions"} {
		for _, v := range r.Header.Values(h) {
			if strings.Contains(v, tethera2a.LeaseExtensionURI) {
				return true
			}
		}
	}
	return false
}
