/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// FuzzExtensionRequests decodes arbitrary lease and budget extension data
// as an agent receives it, on the message or on the request: a lease is
// either refused or within [MinLeaseTTL, maxTTL], a budget never negative.
func FuzzExtensionRequests(f *testing.F) {
	f.Add([]byte(`{"ttlSeconds":30}`), []byte(`{"meters":{"tokens":100},"deadline":"2030-01-02T03:04:05Z"}`), false)
	f.Add([]byte(`{"ttlSeconds":1e300}`), []byte(`{"meters":{"tokens":-1}}`), true)
	f.Add([]byte(`{"ttlSeconds":"x"}`), []byte(`{"meters":{"tokens":1e30}}`), false)
	f.Add([]byte(`[]`), []byte(`null`), true)
	f.Fuzz(func(t *testing.T, lease, budget []byte, onMessage bool) {
		var l, b any
		if json.Unmarshal(lease, &l) != nil || json.Unmarshal(budget, &b) != nil {
			return
		}
		meta := map[string]any{tethera2a.LeaseExtensionURI: l, tethera2a.BudgetExtensionURI: b}
		msg := &a2a.Message{ID: "m", Role: a2a.MessageRoleUser}
		var reqMeta map[string]any
		if onMessage {
			msg.Metadata = meta
		} else {
			reqMeta = meta
		}
		ttl, err := leaseRequest(msg, reqMeta, tethera2a.MaxLeaseTTL)
		if err == nil && ttl != nil && (*ttl < tethera2a.MinLeaseTTL || *ttl > tethera2a.MaxLeaseTTL) {
			t.Fatalf("lease of %v accepted", *ttl)
		}
		req, err := budgetRequest(msg, reqMeta)
		if err == nil && req != nil {
			for m, n := range req.Meters {
				if n < 0 {
					t.Fatalf("meter %q of %d accepted", m, n)
				}
			}
		}
	})
}
