/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
)

// stockAgent serves a2a-go's default handler (in-memory store, no
// authenticator) over one 1.0 binding, as most agents are deployed.
func stockAgent(t *testing.T, binding string) (Endpoint, *Card) {
	t.Helper()
	a := &testAgent{binding: binding, release: make(chan struct{})}
	handler := a2asrv.NewHandler(&testExecutor{a: a})
	if binding == bindGRPC {
		addr := a.serveGRPC(t, handler)
		return Endpoint{URL: "http://" + addr}, cardOf(bindGRPC, "http://"+addr)
	}
	var h http.Handler
	switch binding {
	case bindJSONRPC:
		h = a2asrv.NewJSONRPCHandler(handler)
	case bindREST:
		h = a2asrv.NewRESTHandler(handler)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	card := cardOf(binding, srv.URL)
	card.Tenant = ""
	return Endpoint{URL: srv.URL}, card
}

func TestProbeListing(t *testing.T) {
	probe := func(g Gomega, ep Endpoint, card *Card) (ListCapability, error) {
		c, err := NewClient(context.Background(), trusting(ep, card), card)
		g.Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		return ProbeListing(context.Background(), c)
	}
	for _, b := range []string{bindJSONRPC, bindREST, bindGRPC} {
		t.Run("stock a2a-go handler answers Unauthenticated/"+b, func(t *testing.T) {
			g := NewWithT(t)
			ep, card := stockAgent(t, b)
			got, err := probe(g, ep, card)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(ListUnsupported))

			c, err := NewClient(context.Background(), trusting(ep, card), card)
			g.Expect(err).NotTo(HaveOccurred())
			defer c.Close()
			_, err = c.ListByContext(context.Background(), "ctx")
			g.Expect(errors.Is(err, ErrCannotList)).To(BeTrue(), "%v", err)
			g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue(), "%v", err)
			g.Expect(Classify(err)).To(Equal(ClassRefused))
		})
	}
	for _, b := range allBindings {
		t.Run("agent with an authenticator/"+b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			card, err := ResolveCard(context.Background(), a.endpoint())
			g.Expect(err).NotTo(HaveOccurred())
			got, err := probe(g, a.endpoint(), card)
			g.Expect(err).NotTo(HaveOccurred())
			if isV03(b) {
				g.Expect(got).To(Equal(ListUnsupported), "0.3 has no ListTasks")
			} else {
				g.Expect(got).To(Equal(ListSupported))
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		g := NewWithT(t)
		for _, srv := range []string{closedURL(t), newStatusServer(t, http.StatusBadGateway)} {
			got, err := probe(g, Endpoint{URL: srv}, cardOf(bindJSONRPC, srv))
			g.Expect(err).To(HaveOccurred())
			g.Expect(got).To(Equal(ListUnknown))
		}
		srv := newStatusServer(t, http.StatusForbidden)
		got, err := probe(g, Endpoint{URL: srv}, cardOf(bindJSONRPC, srv))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(ListUnsupported), "403: not for this caller")
	})
}
