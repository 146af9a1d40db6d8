/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// jsonRPCAgent answers every JSON-RPC call with result(method).
func jsonRPCAgent(t *testing.T, result func(method string) any) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result(req.Method)})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func wireTask(id, contextID string) map[string]any {
	return map[string]any{"id": id, "contextId": contextID, "status": map[string]any{"state": "TASK_STATE_WORKING"}}
}

func TestOverlongIDsAreInvalidAnswers(t *testing.T) {
	long := strings.Repeat("x", 300_000)
	for name, task := range map[string]map[string]any{
		"task id":    wireTask(long, "ctx"),
		"context id": wireTask("t-1", long),
	} {
		t.Run("JSON-RPC "+name, func(t *testing.T) {
			g := NewWithT(t)
			url := jsonRPCAgent(t, func(method string) any {
				if method == "SendMessage" {
					return map[string]any{"task": task}
				}
				if method == "ListTasks" {
					return map[string]any{"tasks": []any{task}, "pageSize": 50, "totalSize": 1, "nextPageToken": ""}
				}
				return task
			})
			c, err := NewClient(context.Background(), Endpoint{URL: url}, cardOf(bindJSONRPC, url))
			g.Expect(err).NotTo(HaveOccurred())
			defer c.Close()
			_, sendErr := c.Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
			_, getErr := c.Get(context.Background(), "t-1", false)
			_, cancelErr := c.Cancel(context.Background(), "t-1")
			for _, err := range []error{sendErr, getErr, cancelErr} {
				var e *Error
				g.Expect(errors.As(err, &e)).To(BeTrue(), "%v", err)
				g.Expect(e.Reason).To(Equal(ReasonInvalidAgentResponse))
				g.Expect(Classify(err)).To(Equal(ClassUnknown), "the agent may hold a task it cannot name")
				g.Expect(len(err.Error())).To(BeNumerically("<", 2048))
			}
			if name == "task id" {
				_, err := c.ListByContext(context.Background(), "ctx")
				g.Expect(err).To(HaveOccurred())
				g.Expect(err.(*Error).Reason).To(Equal(ReasonInvalidAgentResponse))
			}
		})
	}
	t.Run("gRPC", func(t *testing.T) {
		g := NewWithT(t)
		f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) { return completedTask(long[:100_000]), nil })
		_, err := grpcClient(t, g, Endpoint{}, "http://"+f.addr).Get(context.Background(), "t-1", false)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.(*Error).Reason).To(Equal(ReasonInvalidAgentResponse))
	})
	t.Run("at the bound", func(t *testing.T) {
		g := NewWithT(t)
		id := strings.Repeat("i", MaxIDLength)
		url := jsonRPCAgent(t, func(string) any { return wireTask(id, id) })
		c, err := NewClient(context.Background(), Endpoint{URL: url}, cardOf(bindJSONRPC, url))
		g.Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		got, err := c.Get(context.Background(), id, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.ID).To(Equal(id))
	})
}

// hugeStatusLine answers every request with a 2 MiB HTTP status line.
func hugeStatusLine(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_, _ = http.ReadRequest(bufio.NewReader(conn))
				_, _ = fmt.Fprintf(conn, "HTTP/1.1 502 %s\r\nContent-Length: 0\r\n\r\n", strings.Repeat("z", 2<<20))
			}()
		}
	}()
	return "http://" + lis.Addr().String()
}

func TestHugeStatusLineIsABoundedError(t *testing.T) {
	url := hugeStatusLine(t)
	hc, err := NewHTTPClient(HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, client := range map[string]*http.Client{
		"operator's client (header limit)": hc,
		"any client (error text limit)":    {},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := NewClient(context.Background(), Endpoint{URL: url, HTTPClient: client}, cardOf(bindJSONRPC, url))
			g.Expect(err).NotTo(HaveOccurred())
			defer c.Close()
			_, err = c.Get(context.Background(), "t-1", false)
			g.Expect(err).To(HaveOccurred())
			g.Expect(len(err.Error())).To(BeNumerically("<=", MaxErrorTextBytes+256), "%.300s", err.Error())
			g.Expect(Classify(err)).To(Equal(ClassUnknown))
		})
	}
}

func TestGRPCHeaderListIsBounded(t *testing.T) {
	g := NewWithT(t)
	f := newFakeGRPCAgent(t, func(ctx context.Context, _ string) (proto.Message, error) {
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-huge", strings.Repeat("h", 1<<20)))
		return completedTask("t-1"), nil
	})
	_, err := grpcClient(t, g, Endpoint{}, "http://"+f.addr).Get(context.Background(), "t-1", false)
	g.Expect(err).To(HaveOccurred())
	g.Expect(len(err.Error())).To(BeNumerically("<=", MaxErrorTextBytes+256))
}

func TestCardIsBoundedAtDecode(t *testing.T) {
	g := NewWithT(t)
	iface := &a2a.AgentInterface{URL: "http://agent", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"}
	card := &a2a.AgentCard{Name: strings.Repeat("ñ", 1000), SupportedInterfaces: []*a2a.AgentInterface{iface}}
	card.Skills = append(card.Skills, a2a.AgentSkill{ID: strings.Repeat("s", MaxSkillFieldLength+1), Name: "dropped"})
	for i := range 100 {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: fmt.Sprintf("skill-%d", i), Name: strings.Repeat("n", 1000)})
	}
	got, err := cardFromWire(card)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(got.Name)).To(BeNumerically("<=", MaxCardNameLength))
	g.Expect(strings.HasPrefix(card.Name, got.Name)).To(BeTrue(), "cut on a rune boundary")
	g.Expect(got.Skills).To(HaveLen(MaxSkills))
	g.Expect(got.Skills[0].ID).To(Equal("skill-0"), "the over-long id is dropped, not cut")
	g.Expect(len(got.Skills[0].Name)).To(Equal(MaxSkillFieldLength))

	iface.URL = "http://agent/" + strings.Repeat("u", MaxInterfaceURLLength)
	_, err = cardFromWire(card)
	g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue(), "%v", err)
}

func TestReportedMetersAreBoundedAtDecode(t *testing.T) {
	g := NewWithT(t)
	spent := map[string]any{strings.Repeat("m", MaxMeterNameLength+1): 5}
	for i := range 90_000 {
		spent[fmt.Sprintf("meter-%05d", i)] = i
	}
	task := &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Metadata: map[string]any{BudgetExtensionURI: map[string]any{"spent": spent, "left": map[string]any{"tokens": 1}}}}
	got := taskFromWire(task)
	g.Expect(got.Usage).NotTo(BeNil())
	g.Expect(got.Usage.Spent).To(HaveLen(MaxReportedMeters))
	g.Expect(got.Usage.Spent).To(HaveKeyWithValue("meter-00000", int64(0)))
	g.Expect(got.Usage.Left).To(Equal(map[string]int64{"tokens": 1}))
}

func TestListByContextDoesNotStopSilently(t *testing.T) {
	g := NewWithT(t)
	pages := 0
	url := jsonRPCAgent(t, func(string) any {
		pages++
		return map[string]any{"tasks": []any{wireTask(fmt.Sprintf("t-%d", pages), "ctx")}, "pageSize": 1, "totalSize": 100_000,
			"nextPageToken": fmt.Sprintf("p-%d", pages)}
	})
	c, err := NewClient(context.Background(), Endpoint{URL: url}, cardOf(bindJSONRPC, url))
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	tasks, err := c.ListByContext(context.Background(), "ctx")
	g.Expect(errors.Is(err, ErrTooManyTasks)).To(BeTrue(), "%v", err)
	g.Expect(tasks).To(BeNil(), "never a partial list")
	g.Expect(Classify(err)).To(Equal(ClassUnknown))
	g.Expect(pages).To(Equal(listPageLimit))
}

// A subscription the agent refuses with a JSON-RPC error answered as a
// plain JSON document (the JS SDK does so for a task that already ended)
// is a refusal, not an empty stream the operator would subscribe to again.
func TestASubscriptionRefusedWithoutAStreamIsRefused(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		body, _ := json.MarshalIndent(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32004, "message": "Task t-1 is in a terminal state and cannot be subscribed to"}}, "", "  ")
		_, _ = w.Write(body) // indented: several lines, as some servers write them
	}))
	t.Cleanup(srv.Close)
	card := cardOf(bindJSONRPC, srv.URL)
	card.Streaming = true
	c, err := NewClient(context.Background(), Endpoint{URL: srv.URL}, card)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	var events int
	var streamErr error
	for _, err := range c.Subscribe(context.Background(), "t-1") {
		if err != nil {
			streamErr = err
			break
		}
		events++
	}
	g.Expect(events).To(BeZero())
	g.Expect(streamErr).To(HaveOccurred(), "the refusal reaches the caller")
	g.Expect(IsRefused(streamErr)).To(BeTrue(), "%v", streamErr)
	g.Expect(streamErr.(*Error).Reason).To(Equal(ReasonUnsupported))
}

// Each event of a stream is bounded by the stream bound, not the response
// bound: many small events pass whatever their sum, an agent that sends a
// large event is cut after MaxStreamBytes, the events before it still
// arrive, and the cut reads as a response too large.
func TestAStreamIsCutAtTheStreamBound(t *testing.T) {
	g := NewWithT(t)
	const bound = 16 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(data any) {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "1", "result": data})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for range 4 * bound / 100 { // each event ~100 bytes: 4 bounds in all
			ev(map[string]any{"task": wireTask("t-1", "ctx")})
		}
		big := wireTask("t-1", "ctx")
		big["metadata"] = map[string]any{"pad": strings.Repeat("x", 4*bound)}
		ev(map[string]any{"task": big})
	}))
	t.Cleanup(srv.Close)
	card := cardOf(bindJSONRPC, srv.URL)
	card.Streaming = true
	c, err := NewClient(context.Background(), Endpoint{URL: srv.URL, MaxStreamBytes: bound}, card)
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	var events []StreamEvent
	var streamErr error
	for ev, err := range c.Subscribe(context.Background(), "t-1") {
		if err != nil {
			streamErr = err
			break
		}
		events = append(events, ev)
	}
	g.Expect(events).To(HaveLen(4*bound/100), "the small events arrived (then %v)", streamErr)
	g.Expect(events[0]).To(Equal(StreamEvent{TaskID: "t-1", State: StateWorking, Task: true}))
	g.Expect(streamErr).To(HaveOccurred())
	g.Expect(errors.Is(streamErr, ErrResponseTooLarge)).To(BeTrue(), "%v", streamErr)

	// The same event is within the response bound of a call.
	g.Expect(maxStreamBytes(Endpoint{MaxStreamBytes: 4 << 20})).To(Equal(DefaultMaxResponseBytes), "never above the response bound")
	g.Expect(maxStreamBytes(Endpoint{})).To(Equal(DefaultMaxStreamBytes))
}
