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
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	. "github.com/onsi/gomega"
)

func TestParseStateCoversBothVersions(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]State{
		// 1.0
		"TASK_STATE_SUBMITTED":      StateSubmitted,
		"TASK_STATE_WORKING":        StateWorking,
		"TASK_STATE_INPUT_REQUIRED": StateInputRequired,
		"TASK_STATE_AUTH_REQUIRED":  StateAuthRequired,
		"TASK_STATE_COMPLETED":      StateCompleted,
		"TASK_STATE_FAILED":         StateFailed,
		"TASK_STATE_CANCELED":       StateCanceled,
		"TASK_STATE_REJECTED":       StateRejected,
		"TASK_STATE_UNSPECIFIED":    StateUnknown,
		// 0.3
		"submitted":      StateSubmitted,
		"working":        StateWorking,
		"input-required": StateInputRequired,
		"auth-required":  StateAuthRequired,
		"completed":      StateCompleted,
		"failed":         StateFailed,
		"canceled":       StateCanceled,
		"rejected":       StateRejected,
		"unknown":        StateUnknown,
		// variants seen in the wild and a2a-go's empty "unspecified"
		"cancelled": StateCanceled,
		"":          StateUnknown,
		"bogus":     StateUnknown,
	} {
		g.Expect(ParseState(in)).To(Equal(want), in)
	}
}

// a2a-go decodes both versions' task JSON to its own TaskState; the mapping
// must hold after that decoding too.
func TestWireTaskStatesMapAfterDecoding(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []string{"TASK_STATE_INPUT_REQUIRED", "input-required"} {
		var task a2a.Task
		g.Expect(json.Unmarshal([]byte(fmt.Sprintf(`{"id":"t","contextId":"c","status":{"state":%q}}`, s)), &task)).To(Succeed())
		g.Expect(taskFromWire(&task).State).To(Equal(StateInputRequired), s)
	}
}

func TestTerminalAndInterrupted(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []State{StateCompleted, StateFailed, StateCanceled, StateRejected} {
		g.Expect(s.Terminal()).To(BeTrue(), string(s))
	}
	for _, s := range []State{StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired, StateUnknown} {
		g.Expect(s.Terminal()).To(BeFalse(), string(s))
	}
	g.Expect(StateAuthRequired.Interrupted()).To(BeTrue())
}

func TestTaskMappingPrefersTheStatusMessageBudgetReport(t *testing.T) {
	g := NewWithT(t)
	task := &a2a.Task{
		ID: "t", ContextID: "c",
		Metadata: map[string]any{BudgetExtensionURI: map[string]any{"spent": map[string]any{"tokens": 1}}},
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: &a2a.Message{
			Parts:    a2a.ContentParts{a2a.NewTextPart("halfway")},
			Metadata: map[string]any{BudgetExtensionURI: map[string]any{"spent": map[string]any{"tokens": 5}}},
		}},
	}
	got := taskFromWire(task)
	g.Expect(got.Usage.Spent).To(Equal(map[string]int64{"tokens": 5}))
	g.Expect(got.StatusText).To(Equal("halfway"))
	g.Expect(got.ResultText).To(BeEmpty(), "a running task has no result yet")

	task.Status.Message.Metadata = nil
	g.Expect(taskFromWire(task).Usage.Spent).To(Equal(map[string]int64{"tokens": 1}))
	task.Metadata = map[string]any{BudgetExtensionURI: "garbage"}
	g.Expect(taskFromWire(task).Usage).To(BeNil())
}

func TestArtifactsFlatten(t *testing.T) {
	g := NewWithT(t)
	task := &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}, Artifacts: []*a2a.Artifact{
		{Name: "report", Parts: a2a.ContentParts{a2a.NewTextPart("line 1"), a2a.NewTextPart("line 2"), {Content: a2a.URL("https://x/y.png"), MediaType: "image/png", Filename: "y.png"}}},
		{Name: "data", Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"a": 1})}},
		{Name: "more", Parts: a2a.ContentParts{a2a.NewTextPart("line 3")}},
	}}
	got := taskFromWire(task)
	g.Expect(got.ResultText).To(Equal("line 1\nline 2\nline 3"))
	g.Expect(got.Artifacts).To(Equal([]Artifact{
		{Name: "report", Text: "line 1\nline 2"},
		{Name: "y.png", MediaType: "image/png", URL: "https://x/y.png"},
		{Name: "data", MediaType: "application/json", Text: `{"a":1}`},
		{Name: "more", Text: "line 3"},
	}))
}

func TestChooseInterface(t *testing.T) {
	iface := func(binding, version string) *a2a.AgentInterface {
		return &a2a.AgentInterface{URL: "http://" + binding + "/" + version, ProtocolBinding: a2a.TransportProtocol(binding), ProtocolVersion: a2a.ProtocolVersion(version)}
	}
	for _, tc := range []struct {
		name    string
		ifaces  []*a2a.AgentInterface
		binding string
		version string
	}{
		{"1.0 JSON-RPC first", []*a2a.AgentInterface{iface("GRPC", "1.0"), iface("JSONRPC", "0.3"), iface("HTTP+JSON", "1.0"), iface("JSONRPC", "1.0")}, BindingJSONRPC, ProtocolV1},
		{"then 1.0 REST", []*a2a.AgentInterface{iface("JSONRPC", "0.3.0"), iface("HTTP+JSON", "1.0.0")}, BindingHTTPJSON, ProtocolV1},
		{"then 1.0 gRPC", []*a2a.AgentInterface{iface("JSONRPC", "0.3.0"), iface("GRPC", "1.0")}, BindingGRPC, ProtocolV1},
		{"then 0.3 JSON-RPC", []*a2a.AgentInterface{iface("HTTP+JSON", "0.3"), iface("GRPC", "0.3"), iface("JSONRPC", "0.3.0")}, BindingJSONRPC, ProtocolV03},
		{"version missing means 1.0", []*a2a.AgentInterface{iface("JSONRPC", "")}, BindingJSONRPC, ProtocolV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			card, err := cardFromWire(&a2a.AgentCard{SupportedInterfaces: tc.ifaces})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(card.Binding).To(Equal(tc.binding))
			g.Expect(card.ProtocolVersion).To(Equal(tc.version))
		})
	}
	g := NewWithT(t)
	_, err := cardFromWire(&a2a.AgentCard{SupportedInterfaces: []*a2a.AgentInterface{iface("GRPC", "0.3"), iface("JSONRPC", "2.0")}})
	g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue())
}

func TestClassifyAndFailureClass(t *testing.T) {
	g := NewWithT(t)
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	readErr := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		err     error
		status  int
		kind    ErrorKind
		code    int
		reason  string
		class   string
		outcome Class
	}{
		{a2a.NewError(a2a.ErrInvalidParams, "ttl"), 200, KindRefused, -32602, ReasonInvalidParams, FailureClassInvalidRequest, ClassRefused},
		{a2a.ErrUnsupportedContentType, 200, KindRefused, -32005, ReasonContentTypeNotSupported, FailureClassInvalidRequest, ClassRefused},
		{a2a.ErrUnauthenticated, 200, KindRefused, -31401, ReasonUnauthenticated, FailureClassPolicyRefusal, ClassRefused},
		{a2a.NewError(a2a.ErrUnauthorized, "no"), 403, KindRefused, -31403, ReasonPermissionDenied, FailureClassPolicyRefusal, ClassRefused},
		{a2a.ErrTaskNotFound, 404, KindRefused, -32001, ReasonTaskNotFound, FailureClassRejected, ClassRefused},
		{a2a.ErrServerError, 401, KindRefused, 401, ReasonUnauthenticated, FailureClassPolicyRefusal, ClassRefused},
		{errors.New("unexpected HTTP status: 400"), 400, KindRefused, 400, ReasonHTTPError, FailureClassInvalidRequest, ClassRefused},
		{errors.New("unexpected HTTP status: 404"), 404, KindRefused, 404, ReasonNotFound, FailureClassRejected, ClassRefused},
		{errors.New("unexpected HTTP status: 407"), 407, KindRefused, 407, ReasonUnauthenticated, FailureClassPolicyRefusal, ClassRefused},
		// The agent's own "something broke" does not say whether work began.
		{a2a.ErrInternalError, 200, KindRefused, -32603, ReasonInternalError, FailureClassUnreachable, ClassUnknown},
		{a2a.ErrServerError, 200, KindRefused, -32000, ReasonServerError, FailureClassUnreachable, ClassUnknown},
		{a2a.ErrInvalidAgentResponse, 200, KindRefused, -32006, ReasonInvalidAgentResponse, FailureClassUnreachable, ClassUnknown},
		// Gateways and rate limits may answer after the agent started.
		{errors.New("unexpected HTTP status: 500"), 500, KindRefused, 500, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{errors.New("unexpected HTTP status: 502"), 502, KindRefused, 502, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{a2a.ErrServerError, 503, KindRefused, 503, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{errors.New("unexpected HTTP status: 504"), 504, KindRefused, 504, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{errors.New("unexpected HTTP status: 429"), 429, KindRefused, 429, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{errors.New("unexpected HTTP status: 408"), 408, KindRefused, 408, ReasonHTTPError, FailureClassUnreachable, ClassUnknown},
		{errors.New("failed to decode"), 200, KindTransport, 0, ReasonInvalidResponse, FailureClassUnreachable, ClassUnknown},
		{errors.New("connection refused"), 0, KindTransport, 0, ReasonUnreachable, FailureClassUnreachable, ClassUnknown},
		{fmt.Errorf("send: %w", dialErr), 0, KindTransport, 0, ReasonUnreachable, FailureClassUnreachable, ClassNotMade},
		{fmt.Errorf("send: %w", readErr), 0, KindTransport, 0, ReasonUnreachable, FailureClassUnreachable, ClassUnknown},
		{fmt.Errorf("send: %w", io.ErrUnexpectedEOF), 200, KindTransport, 0, ReasonInvalidResponse, FailureClassUnreachable, ClassUnknown},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), 0, KindTransport, 0, ReasonTimeout, FailureClassUnreachable, ClassUnknown},
		{fmt.Errorf("x: %w", context.Canceled), 0, KindTransport, 0, ReasonCanceled, FailureClassUnreachable, ClassUnknown},
		{fmt.Errorf("x: %w", ErrEgressDenied), 0, KindTransport, 0, ReasonEgressDenied, FailureClassUnreachable, ClassNotMade},
	} {
		err := classify("Op", tc.err, tc.status, false)
		var e *Error
		g.Expect(errors.As(err, &e)).To(BeTrue())
		g.Expect(e.Kind).To(Equal(tc.kind), tc.err.Error())
		g.Expect(e.Code).To(Equal(tc.code), tc.err.Error())
		g.Expect(e.Reason).To(Equal(tc.reason), tc.err.Error())
		g.Expect(FailureClassOf(err)).To(Equal(tc.class), tc.err.Error())
		g.Expect(Classify(err)).To(Equal(tc.outcome), tc.err.Error())
		g.Expect(IsRefused(err)).To(Equal(tc.outcome == ClassRefused && tc.kind == KindRefused), tc.err.Error())
	}
	g.Expect(FailureClassOf(nil)).To(BeEmpty())
	g.Expect(FailureClassOf(errors.New("other"))).To(Equal(FailureClassUnreachable))
	g.Expect(errors.Is(classify("ListTasks", a2a.ErrMethodNotFound, 200, false), ErrUnsupported)).To(BeTrue())
	g.Expect(errors.Is(classify("ListTasks", a2a.ErrUnsupportedOperation, 0, false), ErrUnsupported)).To(BeTrue())
	g.Expect(errors.Is(classify("GetTask", a2a.ErrTaskNotFound, 200, false), ErrUnsupported)).To(BeFalse())
	g.Expect(classify("GetTask", errors.New("x"), http.StatusOK, true).(*Error).Reason).To(Equal(ReasonResponseTooLarge))
}

// A running task's artifacts are not kept: the result is read when the
// task settles, and a poll's bulk would otherwise wait in memory until the
// reconciler takes the answer.
func TestArtifactsAreKeptOnlyForASettledTask(t *testing.T) {
	g := NewWithT(t)
	task := func(state a2a.TaskState) *a2a.Task {
		return &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: state},
			Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("bulk")}}}}
	}
	for _, state := range []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired} {
		got := taskFromWire(task(state))
		g.Expect(got.Artifacts).To(BeEmpty(), "%s", state)
		g.Expect(got.ResultText).To(BeEmpty(), "%s", state)
	}
	for _, state := range []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected} {
		got := taskFromWire(task(state))
		g.Expect(got.Artifacts).To(HaveLen(1), "%s", state)
		g.Expect(got.ResultText).To(Equal("bulk"), "%s", state)
	}
}
