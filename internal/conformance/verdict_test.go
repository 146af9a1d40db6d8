/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"

	tether "github.com/tether-dev/tether/internal/a2a"
)

func TestJudgeCountsOnlyMustsThatRanAndPassed(t *testing.T) {
	pass := Result{ID: "a", Level: Must, Status: Pass}
	for _, tc := range []struct {
		name        string
		results     []Result
		messageOnly bool
		conformant  bool
		reason      string
	}{
		{name: "every MUST passed", results: []Result{pass, {ID: "b", Level: Must, Status: Pass}}, conformant: true,
			reason: "all 2 MUST checks that apply ran and passed"},
		{name: "not advertised, skipped and SHOULD failures do not count",
			results: []Result{pass, {ID: "ext", Level: Must, Status: NotAdvertised}, {ID: "grpc", Level: Must, Status: Skipped},
				{ID: "sig", Level: Should, Status: Fail}, {ID: "push", Level: Should, Status: NotRun}},
			conformant: true, reason: "all 1 MUST checks that apply ran and passed"},
		{name: "a MUST not run is not conformant",
			results: []Result{pass, {ID: "cancel", Level: Must, Status: NotRun, Seen: "the task was Completed before it could be cancelled"}},
			reason:  "cancel not run: the task was Completed before it could be cancelled"},
		{name: "the first failure is named before anything not run",
			results: []Result{{ID: "x", Level: Must, Status: NotRun, Seen: "no task"}, {ID: "cancel", Level: Must, Status: Fail, Seen: "still Working"},
				{ID: "later", Level: Must, Status: Fail, Seen: "also"}},
			reason: "cancel failed: still Working"},
		{name: "answering with messages only", messageOnly: true,
			results: []Result{pass, {ID: "cancel", Level: Must, Status: NotRun}}, reason: MessageOnlyReason},
		{name: "no MUST ran", results: []Result{{ID: "s", Level: Should, Status: Pass}}, reason: "no MUST check ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Judge(tc.results, tc.messageOnly)
			g.Expect(v.Conformant).To(Equal(tc.conformant))
			g.Expect(v.Reason).To(Equal(tc.reason))
		})
	}
	v := Judge([]Result{{ID: "f", Level: Must, Status: Fail}, {ID: "n", Level: Must, Status: NotRun}}, false)
	NewWithT(t).Expect(v.Failed).To(Equal([]string{"f"}))
	NewWithT(t).Expect(v.NotRun).To(Equal([]string{"n"}))
}

// messageExecutor answers every message with a message, never a task.
type messageExecutor struct{}

func (messageExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("echo: "+messageText(ec.Message))), nil)
	}
}

func (messageExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// stubbornExecutor is the stock agent, but a cancel changes nothing.
type stubbornExecutor struct{ stockExecutor }

func (stubbornExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(nil, a2a.ErrTaskNotCancelable)
	}
}

// a2aGoAgent serves an executor on a2a-go's default handler over JSON-RPC,
// its card declaring caps.
func a2aGoAgent(t *testing.T, exec a2asrv.AgentExecutor, caps a2a.AgentCapabilities, opts ...a2asrv.RequestHandlerOption) string {
	return a2aGoAgentBehind(t, nil, exec, caps, opts...)
}

// a2aGoAgentBehind is a2aGoAgent with its JSON-RPC endpoint wrapped.
func a2aGoAgentBehind(t *testing.T, wrap func(http.Handler) http.Handler, exec a2asrv.AgentExecutor, caps a2a.AgentCapabilities,
	opts ...a2asrv.RequestHandlerOption) string {
	h := a2asrv.NewHandler(exec, append([]a2asrv.RequestHandlerOption{a2asrv.WithLogger(quietLog)}, opts...)...)
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	card := &a2a.AgentCard{Name: "a2a-go", Description: "a2a-go default handler", Version: "1", Capabilities: caps,
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(hs.URL+"/", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	rpc := a2asrv.NewJSONRPCHandler(h)
	if wrap != nil {
		rpc = wrap(rpc)
	}
	mux.Handle("POST /{$}", rpc)
	return hs.URL
}

func TestCheckerReportsAnAgentThatAnswersWithMessagesOnly(t *testing.T) {
	g := NewWithT(t)
	url := a2aGoAgent(t, messageExecutor{}, a2a.AgentCapabilities{Streaming: true})
	rep := runCheck(t, g, Options{Endpoint: tether.Endpoint{URL: url}, Within: 3 * time.Second})
	g.Expect(rep.MessageOnly).To(BeTrue())
	g.Expect(rep.Verdict.Conformant).To(BeFalse())
	g.Expect(rep.Verdict.Reason).To(Equal(MessageOnlyReason))
	for _, id := range []string{CheckSendGetPrefix + "JSONRPC-1.0", CheckInputRequired, CheckCancelWorking, CheckSubscribe, CheckCancelFinished, CheckGetHistory} {
		res, ok := rep.Result(id)
		g.Expect(ok).To(BeTrue(), id)
		g.Expect(res.Status).To(Equal(NotRun), id)
	}
	g.Expect(rep.Verdict.NotRun).To(ContainElement(CheckCancelWorking))
}

func TestCheckerFailsAnAgentThatIgnoresCancelTask(t *testing.T) {
	g := NewWithT(t)
	url := a2aGoAgent(t, stubbornExecutor{}, a2a.AgentCapabilities{})
	rep := runCheck(t, g, Options{Endpoint: tether.Endpoint{URL: url}, Groups: []string{GroupCore}, Within: 3 * time.Second})
	res, _ := rep.Result(CheckCancelWorking)
	g.Expect(res.Status).To(Equal(Fail), res.Seen)
	g.Expect(res.TCK).To(ConsistOf("CORE-CANCEL-001"))
	g.Expect(rep.Verdict.Conformant).To(BeFalse())
	g.Expect(rep.Verdict.Failed).To(ContainElement(CheckCancelWorking))
	g.Expect(rep.Verdict.Reason).To(HavePrefix(CheckCancelWorking + " failed: "))
}

func TestCheckerFollowsStreamsAndPushNotifications(t *testing.T) {
	g := NewWithT(t)
	// The loopback receiver is the run's own: a2a-go's sender refuses
	// private addresses unless told otherwise.
	url := a2aGoAgent(t, stockExecutor{}, a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})))
	rep := runCheck(t, g, Options{Endpoint: tether.Endpoint{URL: url}, Groups: []string{GroupCore, GroupPush}, Within: 5 * time.Second})
	for _, id := range []string{CheckSubscribe, CheckPushDelivery, CheckCancelWorking} {
		res, _ := rep.Result(id)
		g.Expect(res.Status).To(Equal(Pass), "%s: %s", id, res.Seen)
	}
	sub, _ := rep.Result(CheckSubscribe)
	g.Expect(sub.TCK).To(ContainElement("STREAM-SUB-001"))
}

func TestCheckerFailsPushThatNeverComes(t *testing.T) {
	g := NewWithT(t)
	// The card declares push notifications; the sender refuses loopback.
	url := a2aGoAgent(t, stockExecutor{}, a2a.AgentCapabilities{PushNotifications: true},
		a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)))
	rep := runCheck(t, g, Options{Endpoint: tether.Endpoint{URL: url}, Groups: []string{GroupPush}, Within: 2 * time.Second})
	res, _ := rep.Result(CheckPushDelivery)
	g.Expect(res.Status).To(Equal(Fail), res.Seen)
	g.Expect(res.Level).To(Equal(Should))
}

func signingKey(t *testing.T, kid string) *jose.JSONWebKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
}

// signedCard serves the inner agent with its card signed by key.
func signedCard(t *testing.T, inner http.Handler, key *jose.JSONWebKey) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != a2asrv.WellKnownAgentCardPath {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		signed, err := tether.SignCard(rec.Body.Bytes(), key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(signed)
	})
}

func TestCheckerReportsTheCardSignature(t *testing.T) {
	key, other := signingKey(t, "kit-1"), signingKey(t, "other")
	keys := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.Public()}}
	for _, tc := range []struct {
		name     string
		signWith *jose.JSONWebKey
		keys     *jose.JSONWebKeySet
		required bool
		level    Level
		status   Status
		seen     string
	}{
		{name: "signed with a key of the set", signWith: key, keys: keys, level: Should, status: Pass, seen: `signed by key "kit-1" (ES256)`},
		{name: "required and signed", signWith: key, keys: keys, required: true, level: Must, status: Pass},
		{name: "unsigned", level: Should, status: Fail, seen: "not signed"},
		{name: "required and unsigned", required: true, level: Must, status: Fail, seen: "not signed"},
		{name: "signed, no key set", signWith: key, level: Should, status: NotRun, seen: "no key set"},
		{name: "signed by another key", signWith: other, keys: keys, required: true, level: Must, status: Fail, seen: "no signature verifies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := workerAgent(t)
			if tc.signWith != nil {
				h = signedCard(t, h, tc.signWith)
			}
			ep := tether.Endpoint{URL: serve(t, h), CardKeys: tc.keys}
			rep := runCheck(t, g, Options{Endpoint: ep, Groups: []string{GroupCard}, RequireSignature: tc.required})
			res, ok := rep.Result(CheckCardSignature)
			g.Expect(ok).To(BeTrue())
			g.Expect(res.Level).To(Equal(tc.level))
			g.Expect(res.Status).To(Equal(tc.status), res.Seen)
			g.Expect(res.Seen).To(ContainSubstring(tc.seen))
			if tc.required && tc.status != Pass {
				g.Expect(rep.Verdict.Conformant).To(BeFalse())
			}
		})
	}
}

// updateFirst answers SubscribeToTask with a status update first, not the
// task (STREAM-SUB-001 broken); every other call goes to the agent.
func updateFirst(agent http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var call struct {
			ID     any            `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(body, &call) != nil || call.Method != "SubscribeToTask" {
			agent.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, state := range []string{"TASK_STATE_WORKING", "TASK_STATE_CANCELED"} {
			ev, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": map[string]any{
				"statusUpdate": map[string]any{"taskId": call.Params["id"], "contextId": "c", "status": map[string]any{"state": state}}}})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", ev)
		}
	})
}

func TestCheckerFailsAStreamThatDoesNotStartWithTheTask(t *testing.T) {
	g := NewWithT(t)
	url := a2aGoAgentBehind(t, updateFirst, stockExecutor{}, a2a.AgentCapabilities{Streaming: true})
	rep := runCheck(t, g, Options{Endpoint: tether.Endpoint{URL: url}, Groups: []string{GroupCore}, Within: 3 * time.Second})
	res, _ := rep.Result(CheckSubscribe)
	g.Expect(res.Status).To(Equal(Fail), res.Seen)
	g.Expect(res.Seen).To(ContainSubstring("the first event was a status update Working"))
	g.Expect(rep.Verdict.Conformant).To(BeFalse())
}
