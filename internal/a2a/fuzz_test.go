/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// FuzzCardParsing reads arbitrary card documents as ResolveCard does (both
// versions' shapes) and checks that whatever is kept is within bounds.
func FuzzCardParsing(f *testing.F) {
	f.Add([]byte(`{"name":"a","supportedInterfaces":[{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"skills":[{"id":"s","name":"S"}]}`))
	f.Add([]byte(`{"name":"legacy","protocolVersion":"0.3.0","url":"http://a/rpc","preferredTransport":"JSONRPC","capabilities":{"extensions":[{"uri":"` + LeaseExtensionURI + `"}]}}`))
	f.Add([]byte(`{"name":"rest","protocolVersion":"0.3.0","url":"http://a/rest","preferredTransport":"HTTP+JSON","additionalInterfaces":[{"url":"g:1","transport":"GRPC"}]}`))
	f.Add([]byte(`{"supportedInterfaces":[null,{"url":""}],"skills":[null]}`))
	parse := a2av0.NewAgentCardParser()
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := parse(body)
		if err != nil || raw == nil {
			return
		}
		card, err := cardFromWire(raw)
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("a card without a usable interface must say ErrUnsupported: %v", err)
			}
			return
		}
		switch {
		case card.URL == "" || len(card.URL) > MaxInterfaceURLLength:
			t.Fatalf("interface URL of %d bytes kept", len(card.URL))
		case len(card.Tenant) > MaxTenantLength, len(card.Name) > MaxCardNameLength, len(card.Skills) > MaxSkills:
			t.Fatalf("unbounded card kept: tenant %d, name %d, skills %d", len(card.Tenant), len(card.Name), len(card.Skills))
		case card.ProtocolVersion != ProtocolV1 && card.ProtocolVersion != ProtocolV03:
			t.Fatalf("protocol version %q", card.ProtocolVersion)
		}
		for _, s := range card.Skills {
			if len(s.ID) > MaxSkillFieldLength || len(s.Name) > MaxSkillFieldLength {
				t.Fatalf("unbounded skill kept: id %d, name %d bytes", len(s.ID), len(s.Name))
			}
		}
	})
}

// fuzzAgents are in-process servers that answer every call with the fuzz
// input, one per binding, shared by all runs of a fuzz process.
var fuzzAgents = sync.OnceValue(func() map[string]Client {
	out := map[string]Client{}
	httpAnswer := func(wrap func(body []byte, id any) []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				ID any `json:"id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(wrap(*fuzzBody.Load(), req.ID))
		}))
		return srv.URL
	}
	jsonRPC := func(body []byte, id any) []byte {
		rid, _ := json.Marshal(id)
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, rid, body)
	}
	plain := func(body []byte, _ any) []byte { return body }
	urls := map[string]string{
		bindJSONRPC: httpAnswer(jsonRPC), bindV03: httpAnswer(jsonRPC),
		bindREST: httpAnswer(plain), bindV03REST: httpAnswer(plain),
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var req a2apb.GetTaskRequest
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		task := &a2apb.Task{}
		if proto.Unmarshal(*fuzzBody.Load(), task) != nil {
			task = completedTask("t-1")
		}
		return stream.SendMsg(task)
	}))
	go func() { _ = s.Serve(lis) }()
	urls[bindGRPC] = "http://" + lis.Addr().String()

	for b, url := range urls {
		c, err := NewClient(context.Background(), Endpoint{URL: url, MaxResponseBytes: 64 << 10}, cardOf(b, url))
		if err != nil {
			panic(err)
		}
		out[b] = c
	}
	return out
})

var fuzzBody atomic.Pointer[[]byte]

// FuzzTaskDecoding answers GetTask on every binding (1.0 JSON-RPC, REST and
// gRPC, 0.3 JSON-RPC and REST) with arbitrary bytes, through the real
// client: never a panic; an error is ours, bounded and classified; a task
// has ids and meters within bounds.
func FuzzTaskDecoding(f *testing.F) {
	task := `{"id":"t-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT",` +
		`"parts":[{"text":"done"}],"metadata":{"` + BudgetExtensionURI + `":{"spent":{"tokens":5}}}}},` +
		`"artifacts":[{"artifactId":"a","parts":[{"text":"r"},{"url":"https://x/y","mediaType":"application/pdf"},{"data":{"k":1}}]}]}`
	legacy := `{"kind":"task","id":"t-1","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"r"}]}]}`
	pb, _ := proto.Marshal(completedTask(strings.Repeat("i", 300)))
	bindings := []string{bindJSONRPC, bindREST, bindV03, bindV03REST, bindGRPC}
	for i := range bindings {
		f.Add(uint8(i), []byte(task))
		f.Add(uint8(i), []byte(legacy))
		f.Add(uint8(i), pb)
		f.Add(uint8(i), []byte(`{"id":"`+strings.Repeat("x", 300)+`"}`))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fuzzBody.Store(&body)
		c := fuzzAgents()[bindings[int(which)%len(bindings)]]
		got, err := c.Get(context.Background(), "t-1", false)
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("not an *Error: %T %v", err, err)
			}
			if len(err.Error()) > MaxErrorTextBytes+512 {
				t.Fatalf("error text of %d bytes", len(err.Error()))
			}
			switch Classify(err) {
			case ClassRefused, ClassUnknown, ClassNotMade:
			default:
				t.Fatalf("an error classified %q", Classify(err))
			}
			return
		}
		if len(got.ID) > MaxIDLength || len(got.ContextID) > MaxIDLength {
			t.Fatalf("ids of %d and %d bytes kept", len(got.ID), len(got.ContextID))
		}
		checkUsage(t, got.Usage)
	})
}

func checkUsage(t *testing.T, u *Usage) {
	t.Helper()
	if u == nil {
		return
	}
	for _, m := range []map[string]int64{u.Spent, u.Left} {
		if len(m) > MaxReportedMeters {
			t.Fatalf("%d meters kept", len(m))
		}
		for k := range m {
			if k == "" || len(k) > MaxMeterNameLength {
				t.Fatalf("meter name of %d bytes kept", len(k))
			}
		}
	}
}

// FuzzMetadataDecoding decodes arbitrary lease and budget extension data,
// on the task and on its status message, as a task read does.
func FuzzMetadataDecoding(f *testing.F) {
	f.Add([]byte(`{"expiresAt":"2030-01-02T03:04:05Z"}`), []byte(`{"spent":{"tokens":5},"left":{"tokens":-3}}`))
	f.Add([]byte(`{"expiresAt":12}`), []byte(`{"spent":{"tokens":1e300,"x":"y"}}`))
	f.Add([]byte(`null`), []byte(`{"spent":{"":1}}`))
	f.Fuzz(func(t *testing.T, lease, budget []byte) {
		var l, b any
		if json.Unmarshal(lease, &l) != nil || json.Unmarshal(budget, &b) != nil {
			return
		}
		meta := map[string]any{LeaseExtensionURI: l, BudgetExtensionURI: b}
		task := &a2a.Task{ID: "t", ContextID: "c", Metadata: meta,
			Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: &a2a.Message{ID: "m", Role: a2a.MessageRoleAgent, Metadata: meta}}}
		got := taskFromWire(task)
		checkUsage(t, got.Usage)
	})
}

// FuzzClassify feeds the classification arbitrary errors as the transports
// produce them and checks its promises hold together.
func FuzzClassify(f *testing.F) {
	f.Add("SendMessage", "unexpected HTTP status: 502", 502, false, uint8(0))
	f.Add("GetTask", "eof", 200, true, uint8(1))
	f.Add("ListTasks", "x", 0, false, uint8(2))
	f.Add("ResolveCard", "x", 401, false, uint8(3))
	sentinels := []error{nil, a2a.ErrInvalidParams, a2a.ErrInternalError, a2a.ErrServerError, a2a.ErrUnauthenticated,
		a2a.ErrUnsupportedOperation, a2a.ErrTaskNotFound, context.DeadlineExceeded, context.Canceled, ErrEgressDenied,
		&net.OpError{Op: "dial", Err: errors.New("refused")}, &net.OpError{Op: "read", Err: errors.New("reset")}, ErrResponseTooLarge}
	f.Fuzz(func(t *testing.T, op, text string, status int, tooLarge bool, which uint8) {
		err := errors.New(text)
		if s := sentinels[int(which)%len(sentinels)]; s != nil {
			err = fmt.Errorf("%s: %w", text, s)
		}
		got := classify(op, err, status, tooLarge)
		if op == opList {
			got = cannotList(got)
		}
		outcome := Classify(got)
		switch {
		case outcome != ClassRefused && outcome != ClassUnknown && outcome != ClassNotMade:
			t.Fatalf("an error classified %q", outcome)
		case NeverSent(got) && outcome != ClassRefused && outcome != ClassNotMade:
			t.Fatalf("never sent, yet %s: %v", outcome, got)
		case outcome == ClassNotMade && !NeverSent(got):
			t.Fatalf("not made, yet it may have left: %v", got)
		case IsRefused(got) && outcome != ClassRefused:
			t.Fatalf("IsRefused but %s: %v", outcome, got)
		case FailureClassOf(got) != FailureClassUnreachable && outcome != ClassRefused && outcome != ClassNotMade:
			t.Fatalf("failure class %s for an outcome %s: %v", FailureClassOf(got), outcome, got)
		case status >= 500 && status <= 599 && outcome == ClassRefused && !NeverSent(got):
			if e, ok := errors.AsType[*Error](got); ok && e.Code > 0 {
				t.Fatalf("HTTP %d refused: %v", status, got)
			}
		}
	})
}
