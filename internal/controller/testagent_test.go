/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// testAgent is a real a2a-go agent on loopback that records every JSON-RPC
// call it receives. What a task does is chosen by its message text:
// "wait" runs until cancelled, "slow" completes after a second, "input" asks
// for input and completes with the reply, "fail" fails ("fail-long" with a
// 10 kB message), anything else
// completes at once with "echo: TEXT".
type testAgent struct {
	server *httptest.Server
	// dropSends makes the agent process this many SendMessage calls and then
	// drop the connection instead of answering, as when the operator dies
	// between the send and its status write.
	dropSends atomic.Int32
	// failLists makes ListTasks answer 503, as an agent that is briefly
	// unable to look tasks up.
	failLists atomic.Bool
	// failGets makes GetTask answer 502, as an agent behind a failing proxy.
	failGets atomic.Bool
	// slowGets makes every GetTask take this long (nanoseconds), so the
	// operator's scheduled read of a task is on its way most of the time.
	slowGets atomic.Int64
	// hang makes every call wait without an answer until the caller gives
	// up, as an agent that accepts connections and never answers.
	hang atomic.Bool
	// gatewaySends makes a gateway in front of the agent forward this many
	// first messages and then answer gatewayStatus (502, 504) instead of
	// the agent's answer: the agent has the task, the operator does not know.
	gatewaySends  atomic.Int32
	gatewayStatus atomic.Int32
	// lyingStreams makes SubscribeToTask answer with an event that ends
	// another task, then hold the stream open.
	lyingStreams atomic.Bool
	// closingStreams makes SubscribeToTask answer with the task's state and
	// close the stream at once, as handlers that end a stream after each
	// event do.
	closingStreams atomic.Bool
	// bareStreams makes SubscribeToTask answer, after 1.5 s, with only an
	// event that says the task completed: no whole task comes first.
	bareStreams atomic.Bool
	// drippingStreams makes SubscribeToTask answer with the task's state
	// and then drip a large event, 32 KiB every 50 ms, until it is cut.
	drippingStreams atomic.Bool
	// hugeTaskIDs makes the agent answer every first message with a task
	// whose id is 300,000 characters long: an answer no status can hold.
	hugeTaskIDs atomic.Bool
	// lostSends makes a proxy in front of the agent answer this many first
	// messages with 502 without forwarding them: the agent never sees them.
	lostSends atomic.Int32
	// dropReplies makes the agent take this many replies and then drop the
	// connection instead of answering.
	dropReplies atomic.Int32
	// holdSends, while set, holds every first message until the channel is
	// closed (the call is recorded first): a send whose answer is on its way.
	holdSends atomic.Pointer[chan struct{}]
	// holdSendsUpTo holds each first message for a random time up to this
	// (nanoseconds) before the agent stores its task: a look-up made
	// meanwhile finds nothing, as at an agent that stores a task late.
	holdSendsUpTo atomic.Int64
	// gateSends, when set, is called with each first message's text before
	// the agent takes it and holds it until it returns (false: the caller
	// gave up): a test lets sends through one at a time.
	gateSends atomic.Pointer[func(ctx context.Context, text string) bool]
	// store is the agent's task store, to see which tasks started.
	store *taskstore.InMemory

	mu    sync.Mutex
	calls []agentCall
}

type agentCall struct {
	Method string
	// Auth is the Authorization header the call carried.
	Auth      string
	TaskID    string
	MessageID string
	ContextID string
	Text      string
}

func newTestAgent() *testAgent { return newTestAgentWith(false) }

// newStockTestAgent is the agent with a2a-go's default task store: no
// authenticator, so it answers ListTasks with Unauthenticated and cannot
// list tasks for the operator.
func newStockTestAgent() *testAgent { return newTestAgentOpts(false, true) }

// newTestAgentWith builds the agent; withPush makes it advertise and send
// push notifications.
func newTestAgentWith(withPush bool) *testAgent { return newTestAgentOpts(withPush, false) }

// newStreamingTestAgent is the agent with a card that says it streams.
func newStreamingTestAgent() *testAgent {
	return newTestAgentOpts(false, false, func(c *a2a.AgentCard) { c.Capabilities.Streaming = true })
}

func newTestAgentOpts(withPush, stock bool, cardOpts ...func(*a2a.AgentCard)) *testAgent {
	ta := &testAgent{}
	mux := http.NewServeMux()
	ta.server = httptest.NewServer(mux)
	card := &a2a.AgentCard{
		Name:                "test-agent",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(ta.server.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"},
		DefaultOutputModes:  []string{"text"},
		Skills:              []a2a.AgentSkill{{ID: "echo", Name: "Echo"}},
		Capabilities:        a2a.AgentCapabilities{PushNotifications: withPush},
	}
	for _, o := range cardOpts {
		o(card)
	}
	storeConfig := &taskstore.InMemoryStoreConfig{
		// ListTasks needs a user; every caller is the same one here.
		Authenticator: func(context.Context) (string, error) { return "operator", nil },
	}
	if stock {
		storeConfig = nil
	}
	store := taskstore.NewInMemory(storeConfig)
	ta.store = store
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(store)}
	if withPush {
		opts = append(opts, a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})))
	}
	handler := a2asrv.NewHandler(testExecutor{}, opts...)
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", ta.record(a2asrv.NewJSONRPCHandler(handler)))
	return ta
}

func (ta *testAgent) URL() string { return ta.server.URL }
func (ta *testAgent) Close()      { ta.server.Close() }

// record notes each call before the agent handles it.
func (ta *testAgent) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string `json:"method"`
			Params struct {
				ID        string `json:"id"`
				ContextID string `json:"contextId"`
				Message   struct {
					MessageID string `json:"messageId"`
					TaskID    string `json:"taskId"`
					ContextID string `json:"contextId"`
					Parts     []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &req)
		if os.Getenv("TEST_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "AGENT %s %s %v %s\n", r.RemoteAddr, req.Method, r.Header, body)
		}
		c := agentCall{Method: req.Method, TaskID: req.Params.ID, ContextID: req.Params.ContextID, Auth: r.Header.Get("Authorization")}
		if req.Method == "ListTasks" && strings.HasPrefix(req.Params.ContextID, "tether-probe-") {
			// The Agent controller's list probe, kept apart so that tests
			// count the look-ups of Delegations.
			c.Method = "ListTasks probe"
		}
		if m := req.Params.Message; m.MessageID != "" {
			c.TaskID, c.MessageID, c.ContextID = m.TaskID, m.MessageID, m.ContextID
			for _, p := range m.Parts {
				c.Text += p.Text
			}
		}
		ta.mu.Lock()
		ta.calls = append(ta.calls, c)
		ta.mu.Unlock()
		if ta.hang.Load() {
			<-r.Context().Done()
			return
		}
		if req.Method == "SendMessage" && req.Params.Message.TaskID == "" && !ta.holdSend(r.Context(), c.Text) {
			return
		}
		if req.Method == "SubscribeToTask" && ta.misbehaveOnStream(w, r, req.Params.ID) {
			return
		}
		if ta.misbehave(w, r, req.Method, req.Params.Message.TaskID == "", req.Params.Message.ContextID) {
			return
		}
		if d := time.Duration(ta.slowGets.Load()); req.Method == "GetTask" && d > 0 {
			time.Sleep(d)
		}
		if req.Method == "GetTask" && ta.failGets.Load() {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		if req.Method == "ListTasks" && ta.failLists.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if req.Method == "SendMessage" && req.Params.Message.TaskID == "" && ta.gatewaySends.Add(-1) >= 0 {
			next.ServeHTTP(httptest.NewRecorder(), r) // the agent takes the task...
			http.Error(w, "gateway", int(ta.gatewayStatus.Load()))
			return
		}
		if req.Method == "SendMessage" && req.Params.Message.TaskID != "" && ta.dropReplies.Add(-1) >= 0 {
			next.ServeHTTP(httptest.NewRecorder(), r)
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				_ = conn.Close()
			}
			return
		}
		if req.Method == "SendMessage" && ta.dropSends.Add(-1) >= 0 {
			next.ServeHTTP(httptest.NewRecorder(), r) // the agent takes the task...
			if hj, ok := w.(http.Hijacker); ok {      // ...and the answer is lost
				conn, _, _ := hj.Hijack()
				_ = conn.Close()
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// holdSend holds a first message as gateSends, holdSends and holdSendsUpTo say; false
// when the caller gave up meanwhile.
func (ta *testAgent) holdSend(ctx context.Context, text string) bool {
	if gate := ta.gateSends.Load(); gate != nil && !(*gate)(ctx, text) {
		return false
	}
	if held := ta.holdSends.Load(); held != nil {
		select {
		case <-*held:
		case <-ctx.Done():
			return false
		}
	}
	if most := ta.holdSendsUpTo.Load(); most > 0 {
		time.Sleep(time.Duration(rand.Int64N(most)))
	}
	return true
}

// Calls returns the recorded calls of one method ("" for all).
func (ta *testAgent) Calls(method string) []agentCall {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var out []agentCall
	for _, c := range ta.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// LookUps returns the ListTasks calls for one context (not the Agent's
// capability probe, which lists a random one).
func (ta *testAgent) LookUps(contextID string) []agentCall {
	var out []agentCall
	for _, c := range ta.Calls("ListTasks") {
		if c.ContextID == contextID {
			out = append(out, c)
		}
	}
	return out
}

// TasksOf lists the tasks the agent stored in a context.
func (ta *testAgent) TasksOf(contextID string) ([]*a2a.Task, error) {
	resp, err := ta.store.List(context.Background(), &a2a.ListTasksRequest{ContextID: contextID, PageSize: 100})
	if err != nil {
		return nil, err
	}
	return resp.Tasks, nil
}

// Cancelled reports whether CancelTask was received for the task.
func (ta *testAgent) Cancelled(taskID string) bool {
	for _, c := range ta.Calls("CancelTask") {
		if c.TaskID == taskID {
			return true
		}
	}
	return false
}

// budgetExtension is where agents report spend (docs/extensions.md).
const budgetExtension = "https://tether.dev/a2a/ext/budget/v1"

type testExecutor struct{}

func (testExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := messageText(ec.Message)
		if ec.StoredTask != nil { // a reply to a task that asked for input
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("got: "+text)), nil)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
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
		case strings.HasPrefix(text, "slow"):
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("slow done")), nil)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		case strings.HasPrefix(text, "chunked"):
			// Works long enough to be streamed, then sends its result in two
			// chunks and its spend with the end.
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			first := a2a.NewArtifactEvent(ec, a2a.NewTextPart("chunk one"))
			yield(first, nil)
			last := a2a.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a.NewTextPart("chunk two"))
			last.LastChunk = true
			yield(last, nil)
			report := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))
			report.Metadata = map[string]any{budgetExtension: map[string]any{"spent": map[string]any{"tokens": 7}}}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, report), nil)
		case strings.HasPrefix(text, "pushed-end"):
			// Works, then sends its result and, a little later, its end,
			// each as its own event: a2a-go's push sender posts an artifact
			// update, then a status update without the artifacts.
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
			for i, ev := range []a2a.Event{a2a.NewArtifactEvent(ec, a2a.NewTextPart("pushed done")),
				a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)} {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(3-i) * time.Second):
				}
				yield(ev, nil)
			}
		case strings.HasPrefix(text, "whole"):
			// Works, then ends with the whole task as its last event: what
			// the agent pushes is the ended task, artifacts and all.
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil)
			select {
			case <-ctx.Done():
				return
			case <-time.After(3 * time.Second):
			}
			yield(&a2a.Task{ID: ec.TaskID, ContextID: ec.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
				Artifacts: []*a2a.Artifact{{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("whole done")}}}}, nil)
		case strings.HasPrefix(text, "input"):
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("which colour?"))), nil)
		case strings.HasPrefix(text, "lie"):
			// Reports spend no grant allows: negative, and a meter nobody granted.
			report := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))
			report.Metadata = map[string]any{budgetExtension: map[string]any{
				"spent": map[string]any{"tokens": -1_000_000, "invented": 5},
			}}
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("lied")), nil)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, report), nil)
		case strings.HasPrefix(text, "overspend"):
			report := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("done"))
			report.Metadata = map[string]any{budgetExtension: map[string]any{
				"spent": map[string]any{"tokens": int64(1) << 62},
			}}
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("overspent")), nil)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, report), nil)
		case strings.HasPrefix(text, "fail-long"):
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(strings.Repeat("é", 5000)))), nil)
		case strings.HasPrefix(text, "fail-escapes"):
			// An OSC 52 clipboard write, a screen clear and a right-to-left override.
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("\x1b]52;c;aGk=\x07it\x1b[2J broke\u202e"))), nil)
		case strings.HasPrefix(text, "fail"):
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("it broke"))), nil)
		default:
			yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil)
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (testExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(t))
		}
	}
	return b.String()
}

// lieOnStream answers a SubscribeToTask with an event that says another
// task completed, and holds the stream open.
func lieOnStream(w http.ResponseWriter, r *http.Request) {
	ev, _ := json.Marshal(a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: "another-task", ContextID: "another-context",
		Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}})
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":%s}\n\n", ev)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	<-r.Context().Done()
}

// oneEventStream answers a SubscribeToTask with one event (the task is
// working) and ends the stream.
func oneEventStream(w http.ResponseWriter, taskID string) {
	ev, _ := json.Marshal(a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(taskID), ContextID: "ctx",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}})
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":%s}\n\n", ev)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// endOnlyStream answers a SubscribeToTask with one event (the task
// completed) and ends the stream.
func endOnlyStream(w http.ResponseWriter, taskID string) {
	ev, _ := json.Marshal(a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(taskID), ContextID: "ctx",
		Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}})
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":%s}\n\n", ev)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// misbehaveOnStream answers a subscription the way the agent was told to
// close or drip its streams, if it was.
func (ta *testAgent) misbehaveOnStream(w http.ResponseWriter, r *http.Request, taskID string) bool {
	switch {
	case ta.closingStreams.Load():
		oneEventStream(w, taskID)
	case ta.bareStreams.Load():
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
			endOnlyStream(w, taskID)
		}
	case ta.drippingStreams.Load():
		oneEventStream(w, taskID)
		dripEvent(w, r)
	default:
		return false
	}
	return true
}

// dripEvent starts an event and sends 32 KiB of it every 50 ms, up to
// 4 MiB, until the caller cuts the stream.
func dripEvent(w http.ResponseWriter, r *http.Request) {
	fmt.Fprint(w, `data: {"jsonrpc":"2.0","id":"1","result":{"statusUpdate":{"metadata":{"pad":"`)
	chunk := strings.Repeat("x", 32<<10)
	for range 128 {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := fmt.Fprint(w, chunk); err != nil {
			return
		}
	}
}

// misbehave answers the way the agent was told to misbehave, if it was:
// huge task ids, lying streams, first messages lost before the agent.
func (ta *testAgent) misbehave(w http.ResponseWriter, r *http.Request, method string, first bool, contextID string) bool {
	switch {
	case method == "SendMessage" && first && ta.hugeTaskIDs.Load():
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":%q,"contextId":%q,"status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
			strings.Repeat("t", 300000), contextID)
	case method == "SubscribeToTask" && ta.lyingStreams.Load():
		lieOnStream(w, r)
	case method == "SendMessage" && first && ta.lostSends.Add(-1) >= 0:
		http.Error(w, "bad gateway", http.StatusBadGateway)
	default:
		return false
	}
	return true
}
