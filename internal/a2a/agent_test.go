/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// The bindings every shared test runs against.
const (
	bindJSONRPC = "1.0 JSON-RPC"
	bindREST    = "1.0 HTTP+JSON"
	bindV03     = "0.3 JSON-RPC"
	bindV03REST = "0.3 HTTP+JSON"
	bindGRPC    = "1.0 gRPC"
)

var allBindings = []string{bindJSONRPC, bindREST, bindV03, bindV03REST, bindGRPC}

// isV03 reports whether a test binding speaks protocol 0.3.
func isV03(binding string) bool { return binding == bindV03 || binding == bindV03REST }

const cardTenant = "card-tenant"

// testAgent is a real a2a-go agent on loopback. Its executor acts on the
// message text:
//
//	work        submitted, working, then waits for release (or cancel) and completes
//	ask         input-required; the reply completes with "got: <reply>"
//	quick       completes at once, granting a lease and reporting budget usage
//	fail        fails with failure class Transient
//	message     answers with a Message instead of a task
//	big         waits for release, then completes with a 64 KiB artifact
//	chatty <n>  posts n progress messages of 4 KiB, waits for release, completes
//	bad-params  refuses with InvalidParams before starting anything
type testAgent struct {
	binding string
	srv     *httptest.Server // the card (and the agent, except over gRPC)
	grpcURL string           // the gRPC interface, for bindGRPC
	release chan struct{}

	mu       sync.Mutex
	calls    []serverCall
	requests []httpRequest
	execs    []execRecord
	canceled []string
	// cancelMeta is the request metadata of each CancelTask.
	cancelMeta []map[string]any
	// traceContext makes the card declare TraceContextExtensionURI.
	traceContext bool
}

type serverCall struct {
	Method     string
	Tenant     string
	Extensions []string
}

// httpRequest is one HTTP request, or one gRPC call (Path is the full
// method name, Header the metadata, Tenant the request message's tenant).
type httpRequest struct {
	Path   string
	Header http.Header
	Tenant string
}

type execRecord struct {
	TaskID      string
	Text        string
	Metadata    map[string]any // request metadata
	MessageMeta map[string]any
}

// TestMain silences a2a-go's server logs: tests provoke errors on purpose.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

func newTestAgent(t *testing.T, binding string) *testAgent {
	t.Helper()
	a := &testAgent{binding: binding, release: make(chan struct{})}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		// ListTasks needs a user; every caller is the same one here.
		Authenticator: func(context.Context) (string, error) { return "tester", nil },
	})
	handler := a2asrv.NewHandler(&testExecutor{a: a},
		a2asrv.WithTaskStore(store),
		a2asrv.WithCallInterceptors(&callRecorder{a: a}))

	mux := http.NewServeMux()
	switch binding {
	case bindJSONRPC:
		mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(handler))
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) {
				return a.card(&a2a.AgentInterface{URL: a.srv.URL + "/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0", Tenant: cardTenant}), nil
			})))
	case bindREST:
		mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewTenantRESTHandler("/{*}", handler)))
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) {
				return a.card(&a2a.AgentInterface{URL: a.srv.URL + "/rest", ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0", Tenant: cardTenant}), nil
			})))
	case bindV03:
		mux.Handle("/rpc", a2av0.NewJSONRPCHandler(handler))
		// A card as 0.3 agents write it: url/preferredTransport, no supportedInterfaces.
		mux.HandleFunc(a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"name":"legacy agent","description":"d","version":"1","protocolVersion":"0.3.0",
				"url":%q,"preferredTransport":"JSONRPC",
				"capabilities":{"streaming":false,"extensions":[{"uri":%q},{"uri":%q}]},
				"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
				"skills":[{"id":"echo","name":"Echo","description":"echoes","tags":["t"]}]}`,
				a.srv.URL+"/rpc", LeaseExtensionURI, BudgetExtensionURI)
		})
	case bindV03REST:
		mux.Handle("/rest/", http.StripPrefix("/rest", a2av0.NewRESTHandler(handler)))
		mux.HandleFunc(a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"name":"legacy agent","description":"d","version":"1","protocolVersion":"0.3.0",
				"url":%q,"preferredTransport":"HTTP+JSON",
				"capabilities":{"streaming":false,"extensions":[{"uri":%q},{"uri":%q}]},
				"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
				"skills":[{"id":"echo","name":"Echo","description":"echoes","tags":["t"]}]}`,
				a.srv.URL+"/rest", LeaseExtensionURI, BudgetExtensionURI)
		})
	case bindGRPC:
		// A card listing only the gRPC interface; the http scheme asks for
		// plain text.
		a.grpcURL = "http://" + a.serveGRPC(t, handler)
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(
			func(context.Context) (*a2a.AgentCard, error) {
				return a.card(&a2a.AgentInterface{URL: a.grpcURL, ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: "1.0", Tenant: cardTenant}), nil
			})))
	default:
		t.Fatalf("unknown binding %q", binding)
	}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.record(r.URL.Path, r.Header.Clone(), "")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		a.releaseAll()
		a.srv.Close()
	})
	return a
}

func (a *testAgent) record(path string, h http.Header, tenant string) {
	a.mu.Lock()
	a.requests = append(a.requests, httpRequest{Path: path, Header: h, Tenant: tenant})
	a.mu.Unlock()
}

// serveGRPC serves the handler over gRPC on loopback (plain text) and
// returns host:port.
func (a *testAgent) serveGRPC(t *testing.T, handler a2asrv.RequestHandler, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		header := http.Header{}
		for k, vs := range md {
			for _, v := range vs {
				header.Add(k, v)
			}
		}
		tenant := ""
		if r, ok := req.(interface{ GetTenant() string }); ok {
			tenant = r.GetTenant()
		}
		a.record(info.FullMethod, header, tenant)
		return h(ctx, req)
	}))
	s := grpc.NewServer(opts...)
	a2agrpc.NewHandler(handler).RegisterWith(s)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(func() {
		a.releaseAll()
		s.Stop()
	})
	return lis.Addr().String()
}

func (a *testAgent) card(iface *a2a.AgentInterface) *a2a.AgentCard {
	exts := []a2a.AgentExtension{{URI: LeaseExtensionURI}, {URI: BudgetExtensionURI}}
	a.mu.Lock()
	if a.traceContext {
		exts = append(exts, a2a.AgentExtension{URI: TraceContextExtensionURI})
	}
	a.mu.Unlock()
	return &a2a.AgentCard{
		Name:                "test agent",
		Description:         "d",
		Version:             "1",
		SupportedInterfaces: []*a2a.AgentInterface{iface},
		Capabilities: a2a.AgentCapabilities{
			Streaming:  true,
			Extensions: exts,
		},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"t"}}},
	}
}

// endpoint is the agent's base URL; a gRPC agent serves its card and its
// gRPC interface on two ports, so the owner lists the second origin.
func (a *testAgent) endpoint() Endpoint {
	ep := Endpoint{URL: a.srv.URL}
	if a.grpcURL != "" {
		ep.AllowedOrigins = []string{a.grpcURL}
	}
	return ep
}

func (a *testAgent) releaseAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.release:
	default:
		close(a.release)
	}
}

func (a *testAgent) callsOf(method string) []serverCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []serverCall
	for _, c := range a.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (a *testAgent) allCalls() []serverCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

func (a *testAgent) allRequests() []httpRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

func (a *testAgent) lastRequest() httpRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[len(a.requests)-1]
}

func (a *testAgent) execsOf(text string) []execRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []execRecord
	for _, e := range a.execs {
		if e.Text == text {
			out = append(out, e)
		}
	}
	return out
}

func (a *testAgent) wasCanceled(taskID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.canceled, taskID)
}

// extensionHeader is the header name a client of this binding must use.
func (a *testAgent) extensionHeader() string {
	if isV03(a.binding) {
		return "X-A2A-Extensions"
	}
	return "A2A-Extensions"
}

type callRecorder struct {
	a2asrv.PassthroughCallInterceptor
	a *testAgent
}

func (r *callRecorder) Before(ctx context.Context, cc *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.calls = append(r.a.calls, serverCall{Method: cc.Method(), Tenant: cc.Tenant(), Extensions: cc.Extensions().RequestedURIs()})
	return ctx, nil, nil
}

type testExecutor struct{ a *testAgent }

func (e *testExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := strings.TrimSpace(joinText(ec.Message.Parts))
		e.a.mu.Lock()
		e.a.execs = append(e.a.execs, execRecord{TaskID: string(ec.TaskID), Text: text, Metadata: ec.Metadata, MessageMeta: ec.Message.Metadata})
		e.a.mu.Unlock()

		switch text {
		case "bad-params":
			yield(nil, a2a.NewError(a2a.ErrInvalidParams, "lease ttl out of range"))
			return
		case "message":
			m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello back"))
			m.ContextID = ec.ContextID
			yield(m, nil)
			return
		}

		if ec.StoredTask != nil { // a reply to a task that asked for input
			if yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) &&
				yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("got: "+text)), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
			return
		}
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		chatty := 0
		if n, ok := strings.CutPrefix(text, "chatty "); ok {
			chatty, _ = strconv.Atoi(n)
			text = "chatty"
		}
		switch text {
		case "ask":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, agentMessage(ec, "need more", nil)), nil)
		case "work":
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-e.a.release:
			}
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done: work")), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		case "quick":
			if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done: quick"), a2a.NewFileURLPart("https://example.com/r.pdf", "application/pdf")), nil) {
				return
			}
			done := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, agentMessage(ec, "all done", map[string]any{
				BudgetExtensionURI: map[string]any{"left": map[string]any{"tokens": 19000}, "spent": map[string]any{"tokens": 1000}},
			}))
			// a2a-go merges status-update metadata into the task's.
			done.Metadata = map[string]any{LeaseExtensionURI: map[string]any{"expiresAt": leaseGrant.Format(time.RFC3339)}}
			yield(done, nil)
		case "fail":
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentMessage(ec, "boom", map[string]any{FailureClassMetadataKey: "Transient"})), nil)
		case "chatty":
			// A stock agent reporting progress: every status message goes
			// to the history, n × 4 KiB of it. It starts a moment after the
			// send was answered: a 0.3 REST server may snapshot the task
			// with its history into the send's answer, which is not what
			// this agent is about.
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			for i := 1; i <= chatty; i++ {
				msg := agentMessage(ec, fmt.Sprintf("progress %d %s", i, strings.Repeat("p", 4<<10)), nil)
				if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg), nil) {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-e.a.release:
			}
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done: chatty")), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, agentMessage(ec, "finished", nil)), nil)
			}
		case "big":
			select { // so that the send answer is still small
			case <-ctx.Done():
				return
			case <-e.a.release:
			}
			if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(strings.Repeat("x", 64<<10))), nil) {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
			}
		default:
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, agentMessage(ec, "echo: "+text, nil)), nil)
		}
	}
}

func (e *testExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	e.a.mu.Lock()
	e.a.canceled = append(e.a.canceled, string(ec.TaskID))
	e.a.cancelMeta = append(e.a.cancelMeta, ec.Metadata)
	e.a.mu.Unlock()
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

var leaseGrant = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func agentMessage(ec *a2asrv.ExecutorContext, text string, meta map[string]any) *a2a.Message {
	m := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
	m.Metadata = meta
	return m
}

// newStatusServer answers every request with the status and a plain body.
func newStatusServer(t *testing.T, code int) string {
	return newRawServer(t, code, "text/plain", http.StatusText(code))
}

func newRawServer(t *testing.T, code int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// closedURL is a loopback address nobody listens on. Use it at once: a
// server started later may get the port.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	return url
}
