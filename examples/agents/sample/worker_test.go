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

	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/pkg/agentkit"
)

func startWorker(t *testing.T) *a2aclient.Client {
	t.Helper()
	g := NewWithT(t)
	w := Worker{Name: "w", Steps: 2, Delay: time.Millisecond, Spend: 100, Meter: "tokens",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := agentkit.NewServer(&a2a.AgentCard{Name: "w"}, w)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), hs.URL)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := a2aclient.NewFromCard(context.Background(), card)
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// send waits for the task to finish or ask for input.
func send(t *testing.T, c *a2aclient.Client, taskID a2a.TaskID, text string, meta map[string]any) *a2a.Task {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.TaskID, msg.Metadata = taskID, meta
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return res.(*a2a.Task)
}

func class(t *a2a.Task) any { return t.Status.Message.Metadata[tethera2a.FailureClassMetadataKey] }

func TestWorkerAsksThenCompletesOnTheReply(t *testing.T) {
	g := NewWithT(t)
	c := startWorker(t)

	task := send(t, c, "", "please ask", nil)
	g.Expect(task.Status.State).To(Equal(a2a.TaskStateInputRequired))

	task = send(t, c, task.ID, "the numbers", nil)
	g.Expect(task.Status.State).To(Equal(a2a.TaskStateCompleted))
	g.Expect(task.Artifacts).To(HaveLen(1))
	g.Expect(task.Artifacts[0].Parts[0].Text()).To(ContainSubstring("got: the numbers"))
}

func TestWorkerFailsAndRefusesWithAClass(t *testing.T) {
	g := NewWithT(t)
	c := startWorker(t)

	g.Expect(class(send(t, c, "", "fail please", nil))).To(Equal("Internal"))
	g.Expect(class(send(t, c, "", "refuse", nil))).To(Equal("PolicyRefusal"))
}

func TestWorkerStopsWhenItsBudgetRunsOut(t *testing.T) {
	g := NewWithT(t)
	c := startWorker(t)
	meta := map[string]any{tethera2a.BudgetExtensionURI: map[string]any{"meters": map[string]any{"tokens": 250}}}

	task := send(t, c, "", "steps=5", meta)
	g.Expect(task.Status.State).To(Equal(a2a.TaskStateFailed))
	g.Expect(class(task)).To(Equal("BudgetExhausted"))
	g.Expect(task.Metadata[tethera2a.BudgetExtensionURI]).To(
		HaveKeyWithValue("spent", HaveKeyWithValue("tokens", BeNumerically("==", 200))))
}

func TestWorkerHonoursCancelPromptly(t *testing.T) {
	g := NewWithT(t)
	c := startWorker(t)
	ctx := context.Background()

	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("forever delay=1h")),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	g.Expect(err).NotTo(HaveOccurred())
	id := res.(*a2a.Task).ID

	start := time.Now()
	task, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(task.Status.State).To(Equal(a2a.TaskStateCanceled))
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
}
