/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package sample

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/pkg/agentkit"
)

const testMeter = "tokens"

// The fake client stands in for the operator: the test plays its part by
// setting the children's status. End to end runs are the operator's tests.
func TestOrchestratorSplitsItsBudgetAndSummarises(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	// The agent's address comes first: agentkit proves a claim only for a
	// Delegation whose Agent's endpoint is at the agent's own origin.
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	// The Delegation the operator sent the task for, through an Agent at this
	// agent: agentkit checks that the task's first message id is the one
	// derived from its UID and that its Agent points here.
	orch := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orch", UID: "orch-uid"},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "orchestrator"}}}
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orchestrator"},
		Status: v1alpha1.AgentStatus{Endpoint: url + "/"}}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Delegation{}).WithObjects(orch, agent).Build()

	o := Orchestrator{Kube: kube, WorkerAgent: "worker", Fanout: 3, Spend: 1, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := agentkit.NewServer(&a2a.AgentCard{Name: "o"}, o, agentkit.WithOrigins(url))
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(func() { hs.Close(); srv.Close() })
	card, err := agentcard.DefaultResolver.Resolve(ctx, hs.URL)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := a2aclient.NewFromCard(ctx, card)
	g.Expect(err).NotTo(HaveOccurred())

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("count things fanout=2"))
	msg.ID = delegation.MessageID(string(orch.UID), -1)
	msg.Metadata = map[string]any{
		tethera2a.DelegationMetadataKey: "team/orch",
		tethera2a.BudgetExtensionURI:    map[string]any{"meters": map[string]any{testMeter: 301}},
	}
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: msg,
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	g.Expect(err).NotTo(HaveOccurred())
	id := res.(*a2a.Task).ID

	list := &v1alpha1.DelegationList{}
	children := func() []v1alpha1.Delegation {
		g.Expect(kube.List(ctx, list)).To(Succeed())
		var out []v1alpha1.Delegation
		for _, d := range list.Items {
			if d.Spec.ParentRef != nil {
				out = append(out, d)
			}
		}
		return out
	}
	g.Eventually(children).Should(HaveLen(2))
	for _, child := range children() {
		g.Expect(child.Spec.ParentRef).To(Equal(&v1alpha1.LocalRef{Name: "orch"}))
		g.Expect(child.Spec.AgentRef).To(Equal(&v1alpha1.AgentRef{Name: "worker"}))
		g.Expect(child.Spec.Budget.Meters).To(Equal(map[string]int64{testMeter: 150}))
		g.Expect(child.Spec.Message.Text).To(HavePrefix("count things fanout=2 (part "))

		child.Status.Phase = v1alpha1.PhaseSucceeded
		child.Status.Outcome = &v1alpha1.Outcome{Reason: "Completed"}
		child.Status.Result = &v1alpha1.Result{Text: "counted"}
		// As the operator writes it: granted 150, the worker reported 100.
		child.Status.Budget = &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{testMeter: 150},
			Reported: v1alpha1.Meters{testMeter: 100}, Spent: v1alpha1.Meters{testMeter: 100}}
		g.Expect(kube.Status().Update(ctx, &child)).To(Succeed())
	}

	var task *a2a.Task
	g.Eventually(func() a2a.TaskState {
		task, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		g.Expect(err).NotTo(HaveOccurred())
		return task.Status.State
	}).WithTimeout(5 * time.Second).Should(Equal(a2a.TaskStateCompleted))
	g.Expect(task.Artifacts[0].Parts[0].Text()).To(And(
		ContainSubstring(agentkit.ChildName("orch", "part-1")+": Succeeded counted"),
		ContainSubstring(agentkit.ChildName("orch", "part-2")+": Succeeded counted")))
	report := task.Metadata[tethera2a.BudgetExtensionURI]
	g.Expect(report).To(HaveKeyWithValue("left", HaveKeyWithValue(testMeter, BeNumerically("==", 100))),
		"its own planning and the children's spend, not their grants, are used up")
	g.Expect(report).To(HaveKeyWithValue("spent", HaveKeyWithValue(testMeter, BeNumerically("==", 1))),
		"it reports only its own spend; the operator charges the children's")
}
