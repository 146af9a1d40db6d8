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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const secret = "s3cret-token-value"

func dialAgent(t *testing.T, g Gomega, a *testAgent, ep Endpoint) Client {
	t.Helper()
	c, err := Dial(context.Background(), ep)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Close)
	return c
}

func eventuallyState(g Gomega, c Client, id string, want State) *Task {
	var got *Task
	g.Eventually(func(g Gomega) {
		var err error
		got, err = c.Get(context.Background(), id, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.State).To(Equal(want))
	}).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	return got
}

func TestResolveCardPerBinding(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			card, err := ResolveCard(context.Background(), a.endpoint())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(card.Skills).To(Equal([]Skill{{ID: "echo", Name: "Echo"}}))
			g.Expect(card.Lease).To(BeTrue())
			g.Expect(card.Budget).To(BeTrue())
			switch b {
			case bindJSONRPC:
				g.Expect(card).To(HaveField("ProtocolVersion", ProtocolV1))
				g.Expect(card).To(HaveField("Binding", BindingJSONRPC))
				g.Expect(card).To(HaveField("URL", a.srv.URL+"/rpc"))
				g.Expect(card).To(HaveField("Tenant", cardTenant))
				g.Expect(card.Streaming).To(BeTrue())
			case bindREST:
				g.Expect(card).To(HaveField("ProtocolVersion", ProtocolV1))
				g.Expect(card).To(HaveField("Binding", BindingHTTPJSON))
				g.Expect(card).To(HaveField("URL", a.srv.URL+"/rest"))
			case bindV03:
				g.Expect(card).To(HaveField("Name", "legacy agent"))
				g.Expect(card).To(HaveField("ProtocolVersion", ProtocolV03))
				g.Expect(card).To(HaveField("Binding", BindingJSONRPC))
				g.Expect(card).To(HaveField("URL", a.srv.URL+"/rpc"))
				g.Expect(card.Streaming).To(BeFalse())
			case bindV03REST:
				g.Expect(card).To(HaveField("ProtocolVersion", ProtocolV03))
				g.Expect(card).To(HaveField("Binding", BindingHTTPJSON))
				g.Expect(card).To(HaveField("URL", a.srv.URL+"/rest"))
			case bindGRPC:
				g.Expect(card).To(HaveField("ProtocolVersion", ProtocolV1))
				g.Expect(card).To(HaveField("Binding", BindingGRPC))
				g.Expect(card).To(HaveField("URL", a.grpcURL))
				g.Expect(card).To(HaveField("Tenant", cardTenant))
			}
		})
	}
}

// Agents speaking both versions pick the card's shape from A2A-Version.
func TestResolveCardAsksForTheVersionOneCard(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	_, err := ResolveCard(context.Background(), a.endpoint())
	g.Expect(err).NotTo(HaveOccurred())
	var cardRequests int
	for _, r := range a.allRequests() {
		if r.Path == "/.well-known/agent-card.json" {
			cardRequests++
			g.Expect(r.Header.Get("A2A-Version")).To(Equal(ProtocolV1))
		}
	}
	g.Expect(cardRequests).To(Equal(1))
}

func TestResolveCardFromCardURL(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	card, err := ResolveCard(context.Background(), Endpoint{URL: "http://unused.invalid", CardURL: a.srv.URL + "/.well-known/agent-card.json"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(card.URL).To(Equal(a.srv.URL + "/rpc"))
}

func TestSendIsNonBlockingThenGetFollowsTheTask(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())

			start := time.Now()
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", ContextID: "ctx-1", Text: "work"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
			g.Expect(task.ID).NotTo(BeEmpty())
			g.Expect(task.ContextID).To(Equal("ctx-1"))
			g.Expect(task.State).To(BeElementOf(StateSubmitted, StateWorking))
			g.Expect(a.execsOf("work")).To(HaveLen(1), "the executor is still holding the task")

			got, err := c.Get(context.Background(), task.ID, false)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.State).To(BeElementOf(StateSubmitted, StateWorking))

			a.releaseAll()
			done := eventuallyState(g, c, task.ID, StateCompleted)
			g.Expect(done.ResultText).To(Equal("done: work"))
			g.Expect(done.Artifacts).To(ConsistOf(HaveField("Text", "done: work")))
		})
	}
}

func TestTenantAndSecretHeaderOnEveryCall(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			ep := a.endpoint()
			ep.Tenant = "ep-tenant"
			ep.Headers = http.Header{"Authorization": {"Bearer " + secret}}
			c := dialAgent(t, g, a, ep)

			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			eventuallyState(g, c, task.ID, StateCompleted)
			_, err = c.Cancel(context.Background(), task.ID)
			g.Expect(err).NotTo(HaveOccurred())

			_, err = c.Get(context.Background(), "no-such-task", false)
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsTaskNotFound(err)).To(BeTrue(), err.Error())
			g.Expect(IsRefused(err)).To(BeTrue())
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))

			for _, r := range a.allRequests() {
				g.Expect(r.Header.Get("Authorization")).To(Equal("Bearer "+secret), r.Path)
			}
			calls := a.allCalls()
			g.Expect(calls).NotTo(BeEmpty())
			if b == bindGRPC {
				// What went on the wire: a2a-go's gRPC handler drops the
				// tenant of CancelTask before its interceptors see it.
				var n int
				for _, r := range a.allRequests() {
					if strings.HasPrefix(r.Path, "/lf.a2a.v1.A2AService/") {
						n++
						g.Expect(r.Tenant).To(Equal("ep-tenant"), r.Path)
					}
				}
				g.Expect(n).To(BeNumerically(">=", 4))
			} else if !isV03(b) { // 0.3 has no tenant on the wire
				for _, call := range calls {
					g.Expect(call.Tenant).To(Equal("ep-tenant"), call.Method)
				}
			}
		})
	}
}

func TestCardTenantIsUsedWithoutOverride(t *testing.T) {
	for _, b := range []string{bindJSONRPC, bindREST, bindGRPC} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = c.Get(context.Background(), task.ID, false)
			g.Expect(err).NotTo(HaveOccurred())
			for _, call := range a.allCalls() {
				g.Expect(call.Tenant).To(Equal(cardTenant), call.Method)
			}
		})
	}
}

func TestNewClientFromCachedCardDoesNotReadTheCard(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	card, err := ResolveCard(context.Background(), a.endpoint())
	g.Expect(err).NotTo(HaveOccurred())
	before := len(a.allRequests())

	c, err := NewClient(context.Background(), a.endpoint(), card)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	g.Expect(c.Card()).To(Equal(card))
	_, err = c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
	g.Expect(err).NotTo(HaveOccurred())
	for _, r := range a.allRequests()[before:] {
		g.Expect(r.Path).NotTo(ContainSubstring("agent-card"))
	}
}

func TestCancelReachesTheExecutor(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "work"})
			g.Expect(err).NotTo(HaveOccurred())

			canceled, err := c.Cancel(context.Background(), task.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(canceled.ID).To(Equal(task.ID))
			g.Eventually(func() bool { return a.wasCanceled(task.ID) }).Should(BeTrue())
			eventuallyState(g, c, task.ID, StateCanceled)
		})
	}
}

func TestCancelOfACompletedTaskReturnsIt(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			eventuallyState(g, c, task.ID, StateCompleted)

			got, err := c.Cancel(context.Background(), task.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.ID).To(Equal(task.ID))
			g.Expect(got.State).To(Equal(StateCompleted))
			g.Expect(got.ResultText).To(Equal("done: quick"))
		})
	}
}

func TestListByContext(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", ContextID: "ctx-list", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = c.Send(context.Background(), SendRequest{MessageID: "m-2", ContextID: "ctx-other", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())

			tasks, err := c.ListByContext(context.Background(), "ctx-list")
			if isV03(b) {
				g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue())
				g.Expect(IsRefused(err)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tasks).To(ConsistOf(HaveField("ID", task.ID)))
		})
	}
}

func TestInputRequiredThenReplyContinuesTheTask(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", ContextID: "ctx-ask", Text: "ask"})
			g.Expect(err).NotTo(HaveOccurred())
			asked := eventuallyState(g, c, task.ID, StateInputRequired)
			g.Expect(asked.StatusText).To(Equal("need more"))
			g.Expect(asked.State.Interrupted()).To(BeTrue())

			// An a2a-go agent stores input-required a moment before it lets go
			// of the execution and refuses a reply in between ("already in
			// progress"), hence the retry.
			var replied *Task
			g.Eventually(func() error {
				replied, err = c.Send(context.Background(), SendRequest{MessageID: "m-1-r1", ContextID: "ctx-ask", TaskID: task.ID, Text: "blue"})
				return err
			}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
			g.Expect(replied.ID).To(Equal(task.ID))
			done := eventuallyState(g, c, task.ID, StateCompleted)
			g.Expect(done.ResultText).To(Equal("got: blue"))
		})
	}
}

func TestLeaseAndBudgetTravelUnderTheirExtensions(t *testing.T) {
	deadline := time.Date(2031, 5, 6, 7, 8, 9, 500, time.UTC)
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{
				MessageID: "m-1", Text: "quick", Skill: "echo",
				Metadata: map[string]any{DelegationMetadataKey: "ns/parent"},
				Lease:    &LeaseRequest{TTL: 30 * time.Second},
				Budget:   &BudgetGrant{Meters: map[string]int64{"tokens": 20000}, Deadline: deadline},
			})
			g.Expect(err).NotTo(HaveOccurred())

			sent := a.lastRequest().Header.Values(a.extensionHeader())
			g.Expect(sent).To(ContainElements(LeaseExtensionURI, BudgetExtensionURI))
			g.Expect(a.callsOf("SendMessage")[0].Extensions).To(ConsistOf(LeaseExtensionURI, BudgetExtensionURI))

			execs := a.execsOf("quick")
			g.Expect(execs).To(HaveLen(1))
			for _, meta := range []map[string]any{execs[0].Metadata, execs[0].MessageMeta} {
				g.Expect(meta).To(HaveKeyWithValue(LeaseExtensionURI, map[string]any{"ttlSeconds": 30.0}))
				g.Expect(meta).To(HaveKeyWithValue(BudgetExtensionURI, map[string]any{
					"meters":   map[string]any{"tokens": 20000.0},
					"deadline": "2031-05-06T07:08:09Z",
				}))
				g.Expect(meta).To(HaveKeyWithValue(DelegationMetadataKey, "ns/parent"))
				g.Expect(meta).To(HaveKeyWithValue(SkillMetadataKey, "echo"))
			}

			done := eventuallyState(g, c, task.ID, StateCompleted)
			g.Expect(done.LeaseExpiresAt.Equal(leaseGrant)).To(BeTrue(), done.LeaseExpiresAt.String())
			g.Expect(done.Usage).To(Equal(&Usage{Left: map[string]int64{"tokens": 19000}, Spent: map[string]int64{"tokens": 1000}}))
			g.Expect(done.StatusText).To(Equal("all done"))
			g.Expect(done.Artifacts).To(ContainElement(Artifact{URL: "https://example.com/r.pdf", MediaType: "application/pdf"}))
		})
	}
}

func TestSendWithoutExtensionDataActivatesNothing(t *testing.T) {
	for _, b := range []string{bindJSONRPC, bindGRPC} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.lastRequest().Header.Values("A2A-Extensions")).To(BeEmpty())
		})
	}
}

func TestGetRenewsTheLeaseOnlyWhenAsked(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "work"})
			g.Expect(err).NotTo(HaveOccurred())

			_, err = c.Get(context.Background(), task.ID, true)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.lastRequest().Header.Values(a.extensionHeader())).To(ConsistOf(LeaseExtensionURI))
			_, err = c.Get(context.Background(), task.ID, false)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a.lastRequest().Header.Values(a.extensionHeader())).To(BeEmpty())

			gets := a.callsOf("GetTask")
			g.Expect(gets).To(HaveLen(2))
			g.Expect(gets[0].Extensions).To(ConsistOf(LeaseExtensionURI))
			g.Expect(gets[1].Extensions).To(BeEmpty())
		})
	}
}

func TestMessageAnswerIsACompletedTask(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", ContextID: "ctx-m", Text: "message"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(task.State).To(Equal(StateCompleted))
			g.Expect(task.ResultText).To(Equal("hello back"))
			g.Expect(task.ID).To(BeEmpty())
		})
	}
}

func TestAgentReportedFailureClass(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "fail"})
			g.Expect(err).NotTo(HaveOccurred())
			failed := eventuallyState(g, c, task.ID, StateFailed)
			g.Expect(failed.FailureClass).To(Equal("Transient"))
			g.Expect(failed.StatusText).To(Equal("boom"))
			g.Expect(failed.ResultText).To(Equal("boom"))
		})
	}
}

func TestInvalidParamsIsARefusedInvalidRequest(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			c := dialAgent(t, g, a, a.endpoint())
			_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "bad-params"})
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsRefused(err)).To(BeTrue(), err.Error())
			var e *Error
			g.Expect(errors.As(err, &e)).To(BeTrue())
			g.Expect(e.Code).To(Equal(-32602))
			g.Expect(e.Reason).To(Equal(ReasonInvalidParams))
			g.Expect(FailureClassOf(err)).To(Equal(FailureClassInvalidRequest))
		})
	}
}

func TestOversizeResponseIsATransportError(t *testing.T) {
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
				g.Expect(err).To(HaveOccurred())
				g.Expect(IsTransport(err)).To(BeTrue(), err.Error())
				g.Expect(errors.Is(err, ErrResponseTooLarge)).To(BeTrue(), err.Error())
				g.Expect(FailureClassOf(err)).To(Equal(FailureClassUnreachable))
			}).Should(Succeed())
		})
	}
}

func TestOversizeCardIsATransportError(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	ep := a.endpoint()
	ep.MaxResponseBytes = 64
	_, err := ResolveCard(context.Background(), ep)
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(errors.Is(err, ErrResponseTooLarge)).To(BeTrue())
}

func TestInvalidLocalRequestSendsNothing(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	c := dialAgent(t, g, a, a.endpoint())
	before := len(a.allRequests())
	for _, req := range []SendRequest{
		{MessageID: "m-1"},
		{MessageID: "m-1", Parts: []Part{{Text: "a", URL: "https://x"}}},
		{MessageID: "m-1", Parts: []Part{{Data: []byte("{not json")}}},
	} {
		_, err := c.Send(context.Background(), req)
		g.Expect(IsRefused(err)).To(BeTrue())
		g.Expect(FailureClassOf(err)).To(Equal(FailureClassInvalidRequest))
	}
	g.Expect(a.allRequests()).To(HaveLen(before))
}

func TestPartsReachTheAgent(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	c := dialAgent(t, g, a, a.endpoint())
	_, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "first", Parts: []Part{
		{Text: "second"},
		{URL: "https://example.com/in.csv", MediaType: "text/csv", Filename: "in.csv"},
		{Data: []byte(`{"k":1}`)},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.execsOf("first\nsecond")).To(HaveLen(1))
}

func TestErrorsFromBrokenEndpoints(t *testing.T) {
	cardFor := func(b, url string) *Card {
		switch b {
		case bindREST:
			return &Card{ProtocolVersion: ProtocolV1, Binding: BindingHTTPJSON, URL: url}
		case bindV03:
			return &Card{ProtocolVersion: ProtocolV03, Binding: BindingJSONRPC, URL: url}
		case bindV03REST:
			return &Card{ProtocolVersion: ProtocolV03, Binding: BindingHTTPJSON, URL: url}
		}
		return &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: url}
	}
	status := func(code int) string { return newStatusServer(t, code) }
	// gRPC: TestGRPCStatusCodes.
	for _, b := range []string{bindJSONRPC, bindREST, bindV03, bindV03REST} {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			send := func(url string) error {
				ep := Endpoint{URL: url, Headers: http.Header{"Authorization": {"Bearer " + secret}}}
				c, err := NewClient(context.Background(), ep, cardFor(b, url))
				g.Expect(err).NotTo(HaveOccurred())
				defer c.Close()
				_, err = c.Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
				return err
			}

			// Nothing listens: the dial failed, nothing was sent.
			err := send(closedURL(t))
			g.Expect(IsTransport(err)).To(BeTrue(), err.Error())
			g.Expect(Classify(err)).To(Equal(ClassNotMade), err.Error())
			g.Expect(NeverSent(err)).To(BeTrue(), err.Error())
			g.Expect(FailureClassOf(err)).To(Equal(FailureClassUnreachable))

			for code, class := range map[int]string{500: FailureClassUnreachable, 401: FailureClassPolicyRefusal, 403: FailureClassPolicyRefusal} {
				err = send(status(code))
				g.Expect(IsRefused(err)).To(Equal(code != 500), err.Error())
				g.Expect(NeverSent(err)).To(BeFalse(), err.Error())
				var e *Error
				g.Expect(errors.As(err, &e)).To(BeTrue())
				g.Expect(e.Code).To(Equal(code))
				g.Expect(FailureClassOf(err)).To(Equal(class), err.Error())
			}
		})
	}

	t.Run("card", func(t *testing.T) {
		g := NewWithT(t)
		_, err := ResolveCard(context.Background(), Endpoint{URL: closedURL(t)})
		g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
		_, err = ResolveCard(context.Background(), Endpoint{URL: status(401)})
		g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
		g.Expect(FailureClassOf(err)).To(Equal(FailureClassPolicyRefusal))
	})
}

func TestUndecodableAnswerIsATransportError(t *testing.T) {
	g := NewWithT(t)
	srv := newRawServer(t, http.StatusOK, "application/json", "{this is not json")
	c, err := NewClient(context.Background(), Endpoint{URL: srv}, &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: srv})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Get(context.Background(), "t-1", false)
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonInvalidResponse))
}

func TestTimeoutIsATransportError(t *testing.T) {
	g := NewWithT(t)
	a := newTestAgent(t, bindJSONRPC)
	c := dialAgent(t, g, a, a.endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := c.Get(ctx, "t-1", false)
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(FailureClassOf(err)).To(Equal(FailureClassUnreachable))
	g.Expect(strings.Contains(err.Error(), ReasonTimeout)).To(BeTrue(), err.Error())
}

func TestListByContextUnsupportedAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		binding, contentType, body string
		status                     int
	}{
		"REST without the route": {BindingHTTPJSON, "text/plain", "404 page not found", http.StatusNotFound},
		"JSON-RPC method not found": {BindingJSONRPC, "application/json",
			`{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"Method not found"}}`, http.StatusOK},
		"JSON-RPC unsupported operation": {BindingJSONRPC, "application/json",
			`{"jsonrpc":"2.0","id":"1","error":{"code":-32004,"message":"nope"}}`, http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			url := newRawServer(t, tc.status, tc.contentType, tc.body)
			c, err := NewClient(context.Background(), Endpoint{URL: url}, &Card{ProtocolVersion: ProtocolV1, Binding: tc.binding, URL: url})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = c.ListByContext(context.Background(), "ctx")
			g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue(), "%v", err)
			g.Expect(IsRefused(err)).To(BeTrue())
		})
	}
}

// A bearer token source is asked before every request, over every binding,
// and replaces an Authorization header; a token that cannot be had fails
// the call before anything is sent (NotMade: it may be made again).
func TestBearerTokenOnEveryCall(t *testing.T) {
	for _, b := range allBindings {
		t.Run(b, func(t *testing.T) {
			g := NewWithT(t)
			a := newTestAgent(t, b)
			ep := a.endpoint()
			ep.Headers = http.Header{"Authorization": {"Bearer static"}}
			var asked atomic.Int32
			var fail atomic.Bool
			ep.BearerToken = func(context.Context) (string, error) {
				if fail.Load() {
					return "", errors.New("no token today")
				}
				return fmt.Sprintf("token-%d", asked.Add(1)), nil
			}
			c := dialAgent(t, g, a, ep)

			task, err := c.Send(context.Background(), SendRequest{MessageID: "m-1", Text: "quick"})
			g.Expect(err).NotTo(HaveOccurred())
			eventuallyState(g, c, task.ID, StateCompleted)
			requests := a.allRequests()
			g.Expect(requests).NotTo(BeEmpty())
			for _, r := range requests {
				g.Expect(r.Header.Get("Authorization")).To(MatchRegexp(`^Bearer token-\d+$`), r.Path)
			}
			g.Expect(int(asked.Load())).To(BeNumerically(">=", len(requests)), "asked for every request")

			fail.Store(true)
			before := len(a.allRequests())
			_, err = c.Send(context.Background(), SendRequest{MessageID: "m-2", Text: "quick"})
			g.Expect(err).To(MatchError(ErrNoCredential))
			g.Expect(Classify(err)).To(Equal(ClassNotMade), err.Error())
			g.Expect(a.allRequests()).To(HaveLen(before), "nothing was sent")
		})
	}
}
