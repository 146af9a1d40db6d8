/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// approvalExtension is a human-in-the-loop extension in the style agent
// frameworks use: the agent asks for approval of a tool call with the call
// under the extension's URI in its message metadata, and accepts only an
// answer that activates the extension and carries a decision under the same URI.
const approvalExtension = "https://example.com/a2a/ext/tool-approval/v1"

// approvalAgent is an a2a-go agent that asks for approval before "running" a tool.
func approvalAgent(t *testing.T) string {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{
		Name:                "approval-agent",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"},
		DefaultOutputModes:  []string{"text"},
		Capabilities:        a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{{URI: approvalExtension}}},
	}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "operator", nil },
	})
	handler := a2asrv.NewHandler(approvalExecutor{}, a2asrv.WithTaskStore(store))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(handler))
	return srv.URL
}

type approvalExecutor struct{}

func (approvalExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			ask := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("approve the tool call delete-branch?"))
			ask.Metadata = map[string]any{approvalExtension: map[string]any{"tool": "delete-branch", "args": map[string]any{"branch": "old"}}}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			return
		}
		decision, why := approvalDecision(ec)
		if decision == "" {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected,
				a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(why))), nil)
			return
		}
		yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("delete-branch "+decision)), nil)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// approvalDecision accepts an answer only when the call activated the
// extension and the message carries {"decision": ...} under its URI.
func approvalDecision(ec *a2asrv.ExecutorContext) (decision, why string) {
	var requested []string
	if ec.ServiceParams != nil {
		values, _ := ec.ServiceParams.Get(a2a.SvcParamExtensions)
		for _, v := range values {
			for uri := range strings.SplitSeq(v, ",") {
				requested = append(requested, strings.TrimSpace(uri))
			}
		}
	}
	activated := false
	for _, uri := range requested {
		activated = activated || uri == approvalExtension
	}
	if !activated {
		return "", "the answer did not activate " + approvalExtension
	}
	raw, err := json.Marshal(ec.Message.Metadata[approvalExtension])
	if err != nil {
		return "", err.Error()
	}
	var data struct {
		Decision string `json:"decision"`
	}
	if json.Unmarshal(raw, &data) != nil || (data.Decision != "approved" && data.Decision != "denied") {
		return "", "the answer carries no decision under " + approvalExtension
	}
	return data.Decision, ""
}

func (approvalExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func TestStructuredReplyApprovesAToolCallThroughAnExtension(t *testing.T) {
	e := setup(t)
	e.createAgent("approver", approvalAgent(t))
	approve := v1alpha1.Reply{
		Text:       "approved by the on-call engineer",
		Metadata:   map[string]apiextensionsv1.JSON{approvalExtension: {Raw: []byte(`{"decision":"approved"}`)}},
		Extensions: []string{approvalExtension},
	}
	tests := []struct {
		name      string
		reply     v1alpha1.Reply
		wantPhase v1alpha1.Phase
		want      string
	}{
		{name: "extension data and activation", reply: approve, wantPhase: v1alpha1.PhaseSucceeded, want: "delete-branch approved"},
		{name: "plain text", reply: v1alpha1.Reply{Text: "yes, go ahead"}, wantPhase: v1alpha1.PhaseFailed,
			want: "the answer did not activate " + approvalExtension},
		{name: "activated without the data", reply: v1alpha1.Reply{Text: "yes", Extensions: []string{approvalExtension}},
			wantPhase: v1alpha1.PhaseFailed, want: "the answer carries no decision under " + approvalExtension},
	}
	for i, tc := range tests {
		name := []string{"approve", "plain", "nodata"}[i]
		e.create(e.task(name, "clean up the repository", func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "approver" }))
		d := e.waitPhase(name, v1alpha1.PhaseInputRequired)
		e.g.Expect(d.Status.Outcome.Message).To(Equal("approve the tool call delete-branch?"), tc.name)
		e.update(name, func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, tc.reply) })
		d = e.waitPhase(name, tc.wantPhase)
		e.g.Expect(d.Status.RepliesSent).To(Equal(int32(1)), tc.name)
		if tc.wantPhase == v1alpha1.PhaseSucceeded {
			e.g.Expect(d.Status.Result.Text).To(Equal(tc.want), tc.name)
		} else {
			e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureRejected), tc.name)
			e.g.Expect(d.Status.Outcome.Message).To(Equal(tc.want), tc.name)
		}
	}
}
