/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"

	tether "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/conformance"
)

// messageOnly answers every message with a message.
type messageOnly struct{}

func (messageOnly) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello")), nil)
	}
}

func (messageOnly) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

func TestCheckAgentSaysAMessageOnlyAgentIsNotConformant(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "chatty", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(hs.URL+"/", a2a.TransportProtocolJSONRPC)}}))
	mux.Handle("POST /{$}", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(messageOnly{})))

	p := runPlugin([]string{"check-agent", "--url", hs.URL, "--checks", "card,core", "--within", "2s"}, nil)
	g.Expect(p.code).To(Equal(exitNotConformant), p.stderr)
	g.Expect(p.stderr).To(ContainSubstring("the agent is not conformant: " + conformance.MessageOnlyReason))
	g.Expect(p.stdout).To(MatchRegexp(`cancel\.working-task\s+CORE-CANCEL-001\s+MUST\s+not run\s+answered with a message`))
	g.Expect(p.stdout).To(ContainSubstring("not conformant: " + conformance.MessageOnlyReason))
}

// The card's signature is checked with --card-keys; --require-signature
// makes an unsigned card a MUST failure.
func TestCheckAgentChecksTheCardSignature(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	key := &jose.JSONWebKey{Key: k, KeyID: "kit-1", Algorithm: string(jose.ES256), Use: "sig"}
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.Public()}})
	g.Expect(err).NotTo(HaveOccurred())
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	g.Expect(os.WriteFile(keysFile, set, 0o600)).To(Succeed())

	unsigned := sampleWorker(t, "")
	signed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(unsigned + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		var card json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&card)
		out, err := tether.SignCard(card, key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(signed.Close)

	p := runPlugin([]string{"check-agent", "--url", signed.URL, "--checks", "card", "--card-keys", keysFile, "--require-signature",
		"--allowed-origin", unsigned}, nil)
	g.Expect(p.stdout).To(MatchRegexp(`card\.signature\s+CARD-SIGN-001,CARD-SIGN-002\s+MUST\s+pass\s+signed by key "kit-1"`))

	p = runPlugin([]string{"check-agent", "--url", unsigned, "--checks", "card", "--require-signature"}, nil)
	g.Expect(p.code).To(Equal(exitNotConformant), p.stderr)
	g.Expect(p.stderr).To(ContainSubstring(conformance.CheckCardSignature + " failed: the card is not signed"))

	p = runPlugin([]string{"check-agent", "--url", unsigned, "--checks", "card"}, nil)
	g.Expect(p.code).To(Equal(exitOK), p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`card\.signature\s+\S+\s+SHOULD\s+fail\s+the card is not signed`))
}
