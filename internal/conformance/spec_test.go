/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/docs/extensions"
	"github.com/tether-dev/tether/internal/a2a"
)

func TestEverySchemaCompiles(t *testing.T) {
	g := NewWithT(t)
	names, err := SchemaNames()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(ConsistOf(SchemaLeaseRequest, SchemaLeaseAnswer, SchemaLeaseCardParams,
		SchemaBudgetRequest, SchemaBudgetReport, SchemaFailureClass, SchemaVectorFile))
}

// Every vector file keeps the documented format (vector-file.schema.json),
// so implementations in other languages can read them without this code.
func TestVectorFilesKeepTheirFormat(t *testing.T) {
	g := NewWithT(t)
	entries, err := fs.ReadDir(extensions.Files, vectorsDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).NotTo(BeEmpty())
	for _, e := range entries {
		raw, err := fs.ReadFile(extensions.Files, vectorsDir+"/"+e.Name())
		g.Expect(err).NotTo(HaveOccurred())
		var doc any
		g.Expect(json.Unmarshal(raw, &doc)).To(Succeed(), e.Name())
		g.Expect(Validate(SchemaVectorFile, doc)).To(Succeed(), e.Name())
	}
	g.Expect(Validate(SchemaVectorFile, map[string]any{"format": "tether-extension-vectors/v1",
		"extension": "https://tether.dev/a2a/ext/lease/v1", "vectors": []any{map[string]any{"name": "x", "kind": "sned", "expect": map[string]any{}}}})).
		NotTo(Succeed(), "a misspelt kind is caught")
}

func TestSchemasTellValidFromInvalid(t *testing.T) {
	for _, tc := range []struct {
		schema string
		value  string
		valid  bool
	}{
		{SchemaLeaseRequest, `{"ttlSeconds": 30}`, true},
		{SchemaLeaseRequest, `{"ttlSeconds": 0.9}`, false},
		{SchemaLeaseRequest, `{}`, false},
		{SchemaLeaseAnswer, `{"expiresAt": "2026-11-29T20:19:00.812Z"}`, true},
		{SchemaLeaseAnswer, `{"expiresAt": "Sunday"}`, false},
		{SchemaLeaseCardParams, `{"maxTTLSeconds": 3600}`, true},
		{SchemaLeaseCardParams, `{"maxTTLSeconds": 0}`, false},
		{SchemaBudgetRequest, `{"meters": {"tokens": 5}, "deadline": "2026-11-29T21:00:00Z"}`, true},
		{SchemaBudgetRequest, `{"meters": {"tokens": -5}}`, false},
		{SchemaBudgetReport, `{"left": {"tokens": 800}, "spent": {"tokens": 200}}`, true},
		{SchemaBudgetReport, `{"spent": {"tokens": -1}}`, false},
		{SchemaFailureClass, `"BudgetExhausted"`, true},
		{SchemaFailureClass, `"OutOfCheese"`, false},
	} {
		t.Run(tc.schema+" "+tc.value, func(t *testing.T) {
			g := NewWithT(t)
			var v any
			g.Expect(json.Unmarshal([]byte(tc.value), &v)).To(Succeed())
			if tc.valid {
				g.Expect(Validate(tc.schema, v)).To(Succeed())
			} else {
				g.Expect(Validate(tc.schema, v)).NotTo(Succeed())
			}
		})
	}
}

// A vector's expected outcome must follow from the schemas: the published
// files cannot disagree with each other.
func TestVectorsAgreeWithTheSchemas(t *testing.T) {
	g := NewWithT(t)
	files, err := LoadVectors()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	kinds := map[string]int{}
	for _, f := range files {
		for _, v := range f.Vectors {
			kinds[v.Kind]++
			t.Run(v.Name, func(t *testing.T) {
				g := NewWithT(t)
				switch v.Kind {
				case KindSend:
					g.Expect(v.Expect.Outcome).To(BeElementOf("accepted", "refused"))
					g.Expect(sendVectorAcceptable(f.Extension, v)).To(Equal(v.Expect.Outcome == "accepted"))
					if v.Expect.Outcome == "refused" {
						g.Expect(v.Expect.Error).NotTo(BeNil())
						g.Expect(v.Expect.Error.Code).To(Equal(-32602))
					}
				case KindCharges:
					g.Expect(Validate(SchemaBudgetRequest, v.Grant)).To(Succeed())
					g.Expect(v.Charges).NotTo(BeEmpty())
				case KindLeaseTimeline:
					g.Expect(v.Steps).NotTo(BeEmpty())
					g.Expect(v.Steps[0].Op).To(Equal("send"))
				default:
					t.Fatalf("unknown kind %q", v.Kind)
				}
				if r := v.Expect.Report; r != nil {
					g.Expect(Validate(SchemaBudgetReport, r)).To(Succeed())
				}
			})
		}
	}
	g.Expect(kinds).To(HaveKey(KindSend))
	g.Expect(kinds).To(HaveKey(KindCharges))
	g.Expect(kinds).To(HaveKey(KindLeaseTimeline))
}

// sendVectorAcceptable is what the schemas say of a send vector: the data
// the agent reads validates, and a lease is within the agent's maximum.
func sendVectorAcceptable(uri string, v Vector) bool {
	data, ok := v.ReadData(uri)
	if !ok {
		return true
	}
	switch uri {
	case a2a.LeaseExtensionURI:
		if Validate(SchemaLeaseRequest, data) != nil {
			return false
		}
		var req a2a.LeaseRequestMetadata
		raw, _ := json.Marshal(data)
		_ = json.Unmarshal(raw, &req)
		return req.TTLSeconds <= v.MaxTTLSeconds()
	case a2a.BudgetExtensionURI:
		return Validate(SchemaBudgetRequest, data) == nil
	}
	return false
}

// recordingAgent answers every JSON-RPC call with one task whose metadata
// carries a lease answer and a budget report, and records what it was sent.
type recordingAgent struct {
	mu     sync.Mutex
	bodies []map[string]any
	task   map[string]any
}

func (a *recordingAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "agent-card.json") {
		base := "http://" + r.Host
		_ = json.NewEncoder(w).Encode(map[string]any{
			"name": "recorder", "description": "records", "version": "1",
			"supportedInterfaces": []any{map[string]any{"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
			"capabilities":        map[string]any{}, "defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
			"skills": []any{},
		})
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	result := any(map[string]any{"task": a.task})
	if body["method"] == "GetTask" {
		result = a.task
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": body["id"], "result": result})
}

// The operator's encoding of both extensions (internal/a2a) is valid against
// the request schemas, in the message and in the request metadata, and it
// reads answers that are valid against the answer schemas.
func TestOperatorSendsAndReadsWhatTheSchemasSay(t *testing.T) {
	g := NewWithT(t)
	lease := map[string]any{"expiresAt": "2026-11-29T20:19:00.812Z"}
	report := map[string]any{"left": map[string]any{"tokens": 800}, "spent": map[string]any{"tokens": 200}}
	g.Expect(Validate(SchemaLeaseAnswer, lease)).To(Succeed())
	g.Expect(Validate(SchemaBudgetReport, report)).To(Succeed())
	agent := &recordingAgent{task: map[string]any{
		"id": "t-1", "contextId": "c-1",
		"status":   map[string]any{"state": "TASK_STATE_WORKING"},
		"metadata": map[string]any{a2a.LeaseExtensionURI: lease, a2a.BudgetExtensionURI: report},
	}}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)

	ctx := context.Background()
	c, err := a2a.Dial(ctx, a2a.Endpoint{URL: srv.URL})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Close)
	for _, tc := range []struct {
		name string
		req  a2a.SendRequest
	}{
		{"lease and budget", a2a.SendRequest{MessageID: "m-1", Text: "work", Lease: &a2a.LeaseRequest{TTL: 30 * time.Second},
			Budget: &a2a.BudgetGrant{Meters: map[string]int64{"tokens": 20000}, Deadline: time.Now().Add(time.Hour)}}},
		{"fractional ttl", a2a.SendRequest{MessageID: "m-2", Text: "work", Lease: &a2a.LeaseRequest{TTL: 1500 * time.Millisecond}}},
		{"deadline only", a2a.SendRequest{MessageID: "m-3", Text: "work", Budget: &a2a.BudgetGrant{Deadline: time.Now().Add(time.Minute)}}},
		{"empty grant", a2a.SendRequest{MessageID: "m-4", Text: "work", Budget: &a2a.BudgetGrant{Meters: map[string]int64{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			task, err := c.Send(ctx, tc.req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(task.LeaseExpiresAt).To(BeTemporally("==", time.Date(2026, 11, 29, 20, 19, 0, 812e6, time.UTC)))
			g.Expect(task.Usage).To(Equal(&a2a.Usage{Left: map[string]int64{"tokens": 800}, Spent: map[string]int64{"tokens": 200}}))

			agent.mu.Lock()
			body := agent.bodies[len(agent.bodies)-1]
			agent.mu.Unlock()
			params := body["params"].(map[string]any)
			msgMeta, _ := params["message"].(map[string]any)["metadata"].(map[string]any)
			reqMeta, _ := params["metadata"].(map[string]any)
			for uri, schema := range map[string]string{a2a.LeaseExtensionURI: SchemaLeaseRequest, a2a.BudgetExtensionURI: SchemaBudgetRequest} {
				sent := (uri == a2a.LeaseExtensionURI && tc.req.Lease != nil) || (uri == a2a.BudgetExtensionURI && tc.req.Budget != nil)
				for where, meta := range map[string]map[string]any{"message": msgMeta, "request": reqMeta} {
					if !sent {
						g.Expect(meta).NotTo(HaveKey(uri), where)
						continue
					}
					g.Expect(meta).To(HaveKey(uri), where)
					g.Expect(Validate(schema, meta[uri])).To(Succeed(), where)
				}
			}
		})
	}

	_, err = c.Get(ctx, "t-1", true)
	g.Expect(err).NotTo(HaveOccurred())
}
