/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var httpBindings = []string{bindJSONRPC, bindREST, bindV03, bindV03REST}

// agentPath is where newTestAgent serves each HTTP binding.
func agentPath(binding string) string {
	if binding == bindREST || binding == bindV03REST {
		return "/rest"
	}
	return "/rpc"
}

func cardOf(binding, target string) *Card {
	switch binding {
	case bindREST:
		// The test agent serves REST under a tenant.
		return &Card{ProtocolVersion: ProtocolV1, Binding: BindingHTTPJSON, URL: target, Tenant: cardTenant}
	case bindV03:
		return &Card{ProtocolVersion: ProtocolV03, Binding: BindingJSONRPC, URL: target}
	case bindV03REST:
		return &Card{ProtocolVersion: ProtocolV03, Binding: BindingHTTPJSON, URL: target}
	case bindGRPC:
		return &Card{ProtocolVersion: ProtocolV1, Binding: BindingGRPC, URL: target}
	}
	return &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: target}
}

// trusting adds the card interface's origin to the endpoint's, as an owner
// lists it in spec.allowedOrigins.
func trusting(ep Endpoint, card *Card) Endpoint {
	if card.Binding == BindingGRPC {
		ep.AllowedOrigins = append(ep.AllowedOrigins, grpcOrigins(card.URL)...)
	} else {
		ep.AllowedOrigins = append(ep.AllowedOrigins, card.URL)
	}
	return ep
}

func sendVia(t *testing.T, g Gomega, ep Endpoint, card *Card, text string) error {
	t.Helper()
	c, err := NewClient(context.Background(), trusting(ep, card), card)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_, err = c.Send(context.Background(), SendRequest{MessageID: "m-outcome", Text: text})
	return err
}

func TestClassifyWithoutAnError(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Classify(nil)).To(Equal(ClassAccepted))
	g.Expect(NeverSent(nil)).To(BeFalse())
	g.Expect(Classify(errors.New("not ours"))).To(Equal(ClassUnknown), "an error of another type proves nothing")
	g.Expect(Classify(fmt.Errorf("wrapped: %w", &Error{Kind: KindRefused, Op: opSend, Code: -32602, Reason: ReasonInvalidParams}))).
		To(Equal(ClassRefused))
}

// Every HTTP status an ingress, a mesh or the agent may answer, on every
// HTTP binding, against a real server.
func TestOutcomeOfHTTPStatuses(t *testing.T) {
	want := map[int]Class{
		400: ClassRefused, 401: ClassRefused, 403: ClassRefused, 404: ClassRefused,
		405: ClassRefused, 407: ClassRefused, 413: ClassRefused, 415: ClassRefused,
		408: ClassUnknown, 429: ClassUnknown, 499: ClassUnknown,
		500: ClassUnknown, 502: ClassUnknown, 503: ClassUnknown, 504: ClassUnknown,
	}
	for _, b := range httpBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			for code, outcome := range want {
				srv := newStatusServer(t, code)
				err := sendVia(t, g, Endpoint{URL: srv}, cardOf(b, srv), "hi")
				g.Expect(Classify(err)).To(Equal(outcome), "%d: %v", code, err)
				g.Expect(NeverSent(err)).To(BeFalse(), "%d reached a server", code)
			}
		})
	}
}

// What proves nothing left the operator, on every binding.
func TestOutcomeWhenNothingWasSent(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			target := closedURL(t)
			if b == bindGRPC {
				target = "http://" + mustHost(t, target)
			}
			err := sendVia(t, g, Endpoint{}, cardOf(b, target), "hi")
			g.Expect(Classify(err)).To(Equal(ClassNotMade), "dial error: %v", err)
			g.Expect(NeverSent(err)).To(BeTrue(), "dial error: %v", err)

			a := newTestAgent(t, b)
			hc, herr := NewHTTPClient(HTTPOptions{DenyCIDRs: []*net.IPNet{{IP: net.IPv4(127, 0, 0, 0), Mask: net.CIDRMask(8, 32)}}})
			g.Expect(herr).NotTo(HaveOccurred())
			card, cerr := ResolveCard(context.Background(), a.endpoint())
			g.Expect(cerr).NotTo(HaveOccurred())
			err = sendVia(t, g, Endpoint{HTTPClient: hc}, card, "quick")
			g.Expect(Classify(err)).To(Equal(ClassNotMade), "egress denied: %v", err)
			g.Expect(NeverSent(err)).To(BeTrue(), "egress denied: %v", err)
			g.Expect(a.execsOf("quick")).To(BeEmpty())

			err = sendVia(t, g, a.endpoint(), card, "")
			g.Expect(Classify(err)).To(Equal(ClassRefused), "empty message: %v", err)
			g.Expect(NeverSent(err)).To(BeTrue())

			_, err = ResolveCard(context.Background(), Endpoint{URL: newStatusServer(t, 502)})
			g.Expect(Classify(err)).To(Equal(ClassRefused), "no card, no send: %v", err)
			g.Expect(NeverSent(err)).To(BeTrue())
		})
	}
}

// A call whose client could not be built never left the operator; an a2a
// error met while building keeps its own meaning.
func TestOutcomeWhenNoClientCouldBeBuilt(t *testing.T) {
	g := NewWithT(t)
	err := NotMade(fmt.Errorf("reading Secret ns/creds: %w", errors.New("not found")))
	g.Expect(NeverSent(err)).To(BeTrue())
	g.Expect(IsTransport(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("reading Secret ns/creds"))
	g.Expect(NotMade(nil)).To(BeNil())
	refused := localError(opNewClient, ReasonUnsupported, errors.New("binding"))
	g.Expect(NotMade(refused)).To(BeIdenticalTo(refused))
	g.Expect(IsTransport(NotMade(refused))).To(BeFalse())
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// An A2A error from the agent itself proves nothing started, on every binding.
func TestOutcomeOfAnAgentRefusal(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "bad-params"})
			g.Expect(Classify(err)).To(Equal(ClassRefused), "%v", err)
			g.Expect(NeverSent(err)).To(BeFalse())

			_, err = c.Get(context.Background(), "no-such-task", false)
			g.Expect(Classify(err)).To(Equal(ClassRefused), "%v", err)
		})
	}
}

// loseAnswers is a reverse proxy in front of an agent that forwards every
// request and then loses the answer as lose says.
func loseAnswers(t *testing.T, target string, lose func(w http.ResponseWriter)) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r) // the agent got the request and answered
		lose(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A proxy that forwards the send and then answers 502 or 504, resets the
// connection or cuts the body: the task exists, the outcome is Unknown.
func TestOutcomeWhenAProxyLosesTheAnswer(t *testing.T) {
	losses := map[string]func(w http.ResponseWriter){
		"502": func(w http.ResponseWriter) { http.Error(w, "upstream connect error", http.StatusBadGateway) },
		"504": func(w http.ResponseWriter) { http.Error(w, "upstream request timeout", http.StatusGatewayTimeout) },
		"reset": func(w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				_ = conn.Close()
			}
		},
		"truncated": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t-`))
		},
	}
	for _, b := range httpBindings {
		for name, lose := range losses {
			t.Run(b+"/"+name, func(t *testing.T) {
				g := NewWithT(t)
				a := newTestAgent(t, b)
				proxy := loseAnswers(t, a.srv.URL, lose)
				err := sendVia(t, g, Endpoint{URL: proxy}, cardOf(b, proxy+agentPath(b)), "quick")
				g.Expect(err).To(HaveOccurred())
				g.Expect(a.execsOf("quick")).To(HaveLen(1), "the agent started the task")
				g.Expect(Classify(err)).To(Equal(ClassUnknown), "%v", err)
				g.Expect(IsRefused(err)).To(BeFalse())
				g.Expect(NeverSent(err)).To(BeFalse())
				g.Expect(FailureClassOf(err)).To(Equal(FailureClassUnreachable), "kept, never refunded")
			})
		}
	}
}

// The same over gRPC: a mesh in front of the agent answers Unavailable or
// DeadlineExceeded after the agent handled the call.
func TestOutcomeWhenAGRPCMeshLosesTheAnswer(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.ResourceExhausted} {
		t.Run(code.String(), func(t *testing.T) {
			g := NewWithT(t)
			a := &testAgent{binding: bindGRPC, release: make(chan struct{})}
			handler := a2asrv.NewHandler(&testExecutor{a: a}, a2asrv.WithTaskStore(taskstore.NewInMemory(nil)))
			addr := a.serveGRPC(t, handler, grpc.ChainUnaryInterceptor(
				func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
					if _, err := h(ctx, req); err != nil {
						return nil, err
					}
					return nil, status.Error(code, "upstream reset before headers")
				}))
			err := sendVia(t, g, Endpoint{}, cardOf(bindGRPC, "http://"+addr), "quick")
			g.Expect(a.execsOf("quick")).To(HaveLen(1), "the agent started the task")
			g.Expect(Classify(err)).To(Equal(ClassUnknown), "%v", err)
			g.Expect(NeverSent(err)).To(BeFalse(), "%v", err)
		})
	}
}

// A successful answer over the size bound was still an answer.
func TestAnswerTooLargeIsUnknown(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			ep := a.endpoint()
			ep.MaxResponseBytes = 16 << 10
			c := dialAgent(t, g, a, ep)
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "big"})
			g.Expect(err).NotTo(HaveOccurred())
			a.releaseAll()
			g.Eventually(func(g Gomega) {
				_, err := c.Get(context.Background(), task.ID, false)
				g.Expect(errors.Is(err, ErrAnswerTooLarge)).To(BeTrue(), "%v", err)
				g.Expect(errors.Is(err, ErrResponseTooLarge)).To(BeTrue(), "%v", err)
				g.Expect(Classify(err)).To(Equal(ClassUnknown), "a send answered this way has no readable task id")
			}).Should(Succeed())
		})
	}
	// A proxy's oversized error page is not the agent's answer.
	g := NewWithT(t)
	srv := newRawServer(t, http.StatusBadGateway, "text/html", string(make([]byte, 64<<10)))
	err := sendVia(t, g, Endpoint{URL: srv, MaxResponseBytes: 1024}, cardOf(bindJSONRPC, srv), "hi")
	g.Expect(errors.Is(err, ErrAnswerTooLarge)).To(BeFalse(), "%v", err)
	g.Expect(Classify(err)).To(Equal(ClassUnknown))
}
