/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// recordingServer records every request it receives with its Authorization header.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD path auth=..."
}

func newRecordingServer(t *testing.T, h http.Handler) *recordingServer {
	r := &recordingServer{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, fmt.Sprintf("%s %s auth=%q", req.Method, req.URL.Path, req.Header.Get("Authorization")))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recordingServer) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// cardServer serves a 1.0 card whose only JSON-RPC interface is ifaceURL.
func cardServer(t *testing.T, ifaceURL string) *recordingServer {
	return newRecordingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":"elsewhere","description":"d","version":"1",
			"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`, ifaceURL)
	}))
}

// A card served by A that advertises B: the card is refused with
// OriginNotAllowed and B never sees a request, let alone the header.
func TestCardPointingAtAnotherOriginGetsNoHeaders(t *testing.T) {
	g := NewWithT(t)
	b := newRecordingServer(t, http.NotFoundHandler())
	a := cardServer(t, b.URL+"/rpc")
	ep := Endpoint{URL: a.URL, Headers: http.Header{"Authorization": {"Bearer " + secret}}}

	_, err := ResolveCard(context.Background(), ep)
	g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonOriginNotAllowed))
	g.Expect(errors.Is(err, ErrOriginNotAllowed)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("spec.allowedOrigins"))
	g.Expect(err.Error()).NotTo(ContainSubstring(secret))
	g.Expect(a.requests()).To(ConsistOf(ContainSubstring(`auth="Bearer `)), "the card host is the owner's: it gets the header")

	// A card recorded earlier (status) is checked again before any call.
	card := &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: b.URL + "/rpc"}
	_, err = NewClient(context.Background(), ep, card)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.(*Error).Reason).To(Equal(ReasonOriginNotAllowed))
	g.Expect(b.requests()).To(BeEmpty(), "B received nothing")
	g.Expect(Classify(err)).To(Equal(ClassRefused), "nothing left the operator")
	g.Expect(NeverSent(&Error{Kind: KindRefused, Op: opSend, Reason: ReasonOriginNotAllowed, Err: ErrOriginNotAllowed})).To(BeTrue())

	// Listing B's origin trusts it: the card is accepted and B gets the header.
	ep.AllowedOrigins = []string{b.URL}
	got, err := ResolveCard(context.Background(), ep)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := NewClient(context.Background(), ep, got)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_, _ = c.Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
	g.Expect(b.requests()).To(ConsistOf(`POST /rpc auth="Bearer ` + secret + `"`))
}

// A redirect is followed only within the Agent's origins: to another port of
// the same host it stops at the redirect (nothing reaches the other server),
// within the origin it is followed with the header.
func TestRedirectsStayWithinTheOrigins(t *testing.T) {
	g := NewWithT(t)
	other := newRecordingServer(t, http.NotFoundHandler())
	var self *recordingServer
	self = newRecordingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away/.well-known/agent-card.json":
			http.Redirect(w, r, other.URL+"/card", http.StatusFound)
		case "/here/.well-known/agent-card.json":
			http.Redirect(w, r, self.URL+"/card", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	headers := http.Header{"Authorization": {"Bearer " + secret}}

	_, err := ResolveCard(context.Background(), Endpoint{URL: self.URL + "/away", Headers: headers})
	g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Code).To(Equal(http.StatusFound))
	g.Expect(other.requests()).To(BeEmpty())

	_, err = ResolveCard(context.Background(), Endpoint{URL: self.URL + "/here", Headers: headers})
	g.Expect(err).To(HaveOccurred()) // the target is a 404
	g.Expect(self.requests()).To(ContainElement(`GET /card auth="Bearer ` + secret + `"`))
}

func TestNoDowngradeFromHTTPS(t *testing.T) {
	g := NewWithT(t)
	srv := newRecordingServer(t, http.NotFoundHandler())
	for name, ep := range map[string]Endpoint{
		"an http allowed origin":    {URL: "https://agent.example", AllowedOrigins: []string{srv.URL}},
		"an http card URL":          {URL: "https://agent.example", CardURL: srv.URL + "/card.json"},
		"an http interface":         {URL: "https://" + srv.Listener.Addr().String()},
		"an invalid allowed origin": {URL: srv.URL, AllowedOrigins: []string{"ftp://agent.example"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			card := &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: srv.URL + "/rpc"}
			_, err := NewClient(context.Background(), ep, card)
			g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
		})
	}
	g.Expect(srv.requests()).To(BeEmpty())
}

func TestOriginPolicy(t *testing.T) {
	_, err := newOriginPolicy(Endpoint{URL: "https://Agent.Example/a2a", CardURL: "https://cards.example:8443/x.json",
		AllowedOrigins: []string{"http://[::1]:9000", "https://rpc.example"}})
	if err == nil {
		t.Fatalf("an http allowed origin beside an https URL must be refused")
	}
	p, err := newOriginPolicy(Endpoint{URL: "https://Agent.Example/a2a", CardURL: "https://cards.example:8443/x.json",
		AllowedOrigins: []string{"https://rpc.example", "https://[::1]:9000"}})
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]bool{
		"https://agent.example/other/path":      true,
		"https://AGENT.example:443/":            true,
		"https://agent.example:444/":            false,
		"http://agent.example/":                 false,
		"https://agent.example.evil.test/":      false,
		"https://user@agent.example/":           true, // user info is not part of the origin
		"https://cards.example:8443/other.json": true,
		"https://cards.example/x.json":          false,
		"https://rpc.example/rpc":               true,
		"https://[::1]:9000/rpc":                true,
		"https://[::1]:9001/rpc":                false,
		"ftp://agent.example/":                  false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.allows(u); got != want {
			t.Errorf("%s: allowed=%v, want %v", raw, got, want)
		}
	}
	// gRPC interfaces: a bare host:port means TLS, so it is an https origin.
	for raw, want := range map[string]bool{
		"rpc.example:443":          true,
		"rpc.example":              true,
		"grpcs://rpc.example":      true,
		"grpc://rpc.example:443":   false, // plain text
		"https://rpc.example:8443": false,
	} {
		if got := p.checkInterface(BindingGRPC, raw, false) == nil; got != want {
			t.Errorf("gRPC %s: allowed=%v, want %v", raw, got, want)
		}
	}
}
