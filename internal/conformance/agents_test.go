/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// stockExecutor is an agent as the a2a-go examples write one, without
// tether's kit: "wait" works until cancelled, "input" asks for input and a
// reply completes it, anything else completes at once.
type stockExecutor struct{}

func (stockExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := messageText(ec.Message)
		if ec.StoredTask != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("got: "+text))), nil)
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch {
		case strings.HasPrefix(text, "wait"):
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			<-ctx.Done()
		case strings.HasPrefix(text, "input"):
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("which?"))), nil)
		default:
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (stockExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// stockAgent is a2a-go's default handler (its in-memory task store, no
// authenticator) behind its JSON-RPC and REST transports.
func stockAgent(t *testing.T) string {
	h := a2asrv.NewHandler(stockExecutor{}, a2asrv.WithLogger(quietLog))
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	card := &a2a.AgentCard{
		Name: "stock", Description: "a2a-go default handler", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(hs.URL+"/", a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(hs.URL+"/rest", a2a.TransportProtocolHTTPJSON),
		},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("POST /{$}", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(h)))
	return hs.URL
}

// rpcCall is one 1.0 JSON-RPC call on its way to a broken agent.
type rpcCall struct {
	Method string
	Params map[string]any
	Header http.Header
	id     any
}

// breakage turns a conforming agent into one that breaks a rule: it
// rewrites the card, or JSON-RPC calls and their answers at "/".
type breakage struct {
	rawCard  string
	card     func(card map[string]any, base string)
	request  func(c *rpcCall)
	response func(c *rpcCall, resp map[string]any, forward func(*rpcCall) map[string]any) map[string]any
}

func (b breakage) wrap(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == a2asrv.WellKnownAgentCardPath && b.rawCard != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, b.rawCard)
		case r.URL.Path == a2asrv.WellKnownAgentCardPath && b.card != nil:
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r)
			var card map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &card)
			b.card(card, "http://"+r.Host)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(card)
		case r.Method == http.MethodPost && r.URL.Path == "/" && (b.request != nil || b.response != nil):
			raw, _ := io.ReadAll(r.Body)
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			params, _ := body["params"].(map[string]any)
			method, _ := body["method"].(string)
			if method == "SubscribeToTask" {
				// A stream is passed through as it comes, unbuffered.
				r.Body = io.NopCloser(bytes.NewReader(raw))
				inner.ServeHTTP(w, r)
				return
			}
			c := &rpcCall{Method: method, Params: params, Header: r.Header.Clone(), id: body["id"]}
			forward := func(c *rpcCall) map[string]any {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": c.Method, "params": c.Params})
				req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/", bytes.NewReader(b))
				req.Header = c.Header.Clone()
				rec := httptest.NewRecorder()
				inner.ServeHTTP(rec, req)
				var resp map[string]any
				_ = json.Unmarshal(rec.Body.Bytes(), &resp)
				return resp
			}
			if b.request != nil {
				b.request(c)
			}
			resp := forward(c)
			if b.response != nil {
				resp = b.response(c, resp, forward)
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(resp)
		default:
			inner.ServeHTTP(w, r)
		}
	})
}

// The helpers below reach into JSON-RPC answers: a task is the result of
// GetTask and CancelTask, and result.task of SendMessage.

func answerTask(c *rpcCall, resp map[string]any) map[string]any {
	res, _ := resp["result"].(map[string]any)
	if c.Method == "SendMessage" {
		res, _ = res["task"].(map[string]any)
	}
	return res
}

func errorCode(resp map[string]any) float64 {
	e, _ := resp["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func message(c *rpcCall) map[string]any {
	m, _ := c.Params["message"].(map[string]any)
	return m
}

// dropMeta removes an extension's data from a send, in the message and the request.
func dropMeta(c *rpcCall, uri string) {
	if m, ok := message(c)["metadata"].(map[string]any); ok {
		delete(m, uri)
	}
	if m, ok := c.Params["metadata"].(map[string]any); ok {
		delete(m, uri)
	}
}

// eachTask applies f to every task in an answer (ListTasks included).
func eachTask(c *rpcCall, resp map[string]any, f func(task map[string]any)) {
	if c.Method == "ListTasks" {
		res, _ := resp["result"].(map[string]any)
		tasks, _ := res["tasks"].([]any)
		for _, t := range tasks {
			if m, ok := t.(map[string]any); ok {
				f(m)
			}
		}
		return
	}
	if t := answerTask(c, resp); t != nil {
		f(t)
	}
}

func taskMeta(task map[string]any) map[string]any {
	m, _ := task["metadata"].(map[string]any)
	return m
}

func statusMessageMeta(task map[string]any) map[string]any {
	st, _ := task["status"].(map[string]any)
	msg, _ := st["message"].(map[string]any)
	m, _ := msg["metadata"].(map[string]any)
	return m
}
