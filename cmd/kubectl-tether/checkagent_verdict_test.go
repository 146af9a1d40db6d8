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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
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

// signedCardOf serves the agent at url with its card signed by key (its
// interfaces stay at url's origin).
func signedCardOf(t *testing.T, url string, key *jose.JSONWebKey) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(url + r.URL.Path)
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
	t.Cleanup(hs.Close)
	return hs.URL
}

func testSigningKey(t *testing.T) (*jose.JSONWebKey, []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	key := &jose.JSONWebKey{Key: k, KeyID: "kit-1", Algorithm: string(jose.ES256), Use: "sig"}
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.Public()}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return key, set
}

// The card's signature is checked with --card-keys; --require-signature
// makes an unsigned card a MUST failure.
func TestCheckAgentChecksTheCardSignature(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	key, set := testSigningKey(t)
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	g.Expect(os.WriteFile(keysFile, set, 0o600)).To(Succeed())

	unsigned := sampleWorker(t, "")
	signed := signedCardOf(t, unsigned, key)

	p := runPlugin([]string{"check-agent", "--url", signed, "--checks", "card", "--card-keys", keysFile, "--require-signature",
		"--allowed-origin", unsigned}, nil)
	g.Expect(p.stdout).To(MatchRegexp(`card\.signature\s+CARD-SIGN-001,CARD-SIGN-002\s+MUST\s+pass\s+signed by key "kit-1"`))

	p = runPlugin([]string{"check-agent", "--url", unsigned, "--checks", "card", "--require-signature"}, nil)
	g.Expect(p.code).To(Equal(exitNotConformant), p.stderr)
	g.Expect(p.stderr).To(ContainSubstring(conformance.CheckCardSignature + " failed: the card is not signed"))

	p = runPlugin([]string{"check-agent", "--url", unsigned, "--checks", "card"}, nil)
	g.Expect(p.code).To(Equal(exitOK), p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`card\.signature\s+\S+\s+SHOULD\s+fail\s+the card is not signed`))
}

// By Agent name, the key set is the Agent's (spec.cardSignature.keys, read
// as the operator reads it) and the signature is a MUST when it is required.
func TestClusterCheckAgentUsesTheAgentsCardKeys(t *testing.T) {
	startAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := apiServer.client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "check-agent-sig-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	key, set := testSigningKey(t)
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "card-keys", Namespace: ns.Name},
		Data: map[string]string{"jwks.json": string(set)}})).To(Succeed())
	unsigned := sampleWorker(t, "")
	sig := &v1alpha1.AgentCardSignature{Required: true,
		Keys: v1alpha1.CardKeys{ConfigMapKeyRef: &v1alpha1.ConfigMapKeyRef{Name: "card-keys", Key: "jwks.json"}}}
	for name, url := range map[string]string{"signed": signedCardOf(t, unsigned, key), "unsigned": unsigned} {
		g.Expect(c.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: v1alpha1.AgentSpec{URL: url, AllowedOrigins: []string{unsigned}, CardSignature: sig}})).To(Succeed())
	}

	p := kubectlTether(ns.Name, "check-agent", "signed", "--checks", "card")
	g.Expect(p.code).To(Equal(exitOK), p.stdout+p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`card\.signature\s+\S+\s+MUST\s+pass\s+signed by key "kit-1"`))

	p = kubectlTether(ns.Name, "check-agent", "unsigned", "--checks", "card")
	g.Expect(p.code).To(Equal(exitNotConformant), p.stdout+p.stderr)
	g.Expect(p.stderr).To(ContainSubstring(conformance.CheckCardSignature + " failed: the card is not signed"))
}
