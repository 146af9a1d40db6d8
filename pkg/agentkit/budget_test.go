/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

func say(ec *a2asrv.ExecutorContext, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
}

func TestBudgetIsVisibleToTheExecutor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour).Truncate(time.Second)
	seen := make(chan *Budget, 1)
	a := startAgent(t, newExec(func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
		seen <- BudgetFrom(ctx)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}))

	_, err := a.send(ctx, "go", budgetMeta(map[string]int64{tokens: 100}, &deadline))
	g.Expect(err).NotTo(HaveOccurred())
	b := <-seen
	g.Expect(b.Limited()).To(BeTrue())
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 100}))
	g.Expect(b.Deadline()).To(BeTemporally("==", deadline))
}

func TestNoBudgetMeansUnlimited(t *testing.T) {
	g := NewWithT(t)
	seen := make(chan *Budget, 1)
	a := startAgent(t, newExec(func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
		seen <- BudgetFrom(ctx)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}))

	_, err := a.send(context.Background(), "go", nil)
	g.Expect(err).NotTo(HaveOccurred())
	b := <-seen
	g.Expect(b.Limited()).To(BeFalse())
	g.Expect(b.Charge(tokens, 1_000_000)).To(Succeed())
	g.Expect(b.Spent()).To(Equal(map[string]int64{tokens: 1_000_000}))
}

func TestEveryStatusUpdateCarriesLeftAndSpent(t *testing.T) {
	g := NewWithT(t)
	a := startAgent(t, newExec(func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
		b := BudgetFrom(ctx)
		_ = b.Charge(tokens, 10)
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, say(ec, "step 1")), nil) {
			return
		}
		_ = b.Charge(tokens, 10)
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, say(ec, "done")), nil)
	}))

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))
	msg.Metadata = budgetMeta(map[string]int64{tokens: 100, calls: 5}, nil)
	var reports []tethera2a.BudgetReportMetadata
	for ev, err := range a.plain.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}) {
		g.Expect(err).NotTo(HaveOccurred())
		su, ok := ev.(*a2a.TaskStatusUpdateEvent)
		if !ok {
			continue
		}
		r := budgetReport(su.Metadata)
		g.Expect(r).NotTo(BeNil(), "status update %s carries a report", su.Status.State)
		if su.Status.Message != nil {
			g.Expect(budgetReport(su.Status.Message.Metadata)).To(Equal(r), "and so does its status message")
		}
		reports = append(reports, *r)
	}
	g.Expect(reports).To(Equal([]tethera2a.BudgetReportMetadata{
		{Left: map[string]int64{tokens: 90, calls: 5}, Spent: map[string]int64{tokens: 10}},
		{Left: map[string]int64{tokens: 80, calls: 5}, Spent: map[string]int64{tokens: 20}},
		{Left: map[string]int64{tokens: 80, calls: 5}, Spent: map[string]int64{tokens: 20}},
	}))
}

func TestChargeBeyondTheGrantFailsTheTask(t *testing.T) {
	for name, agent := range map[string]agentFn{
		"yields the error": func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
			if err := BudgetFrom(ctx).Charge(tokens, 11); err != nil {
				yield(nil, err)
			}
		},
		"just stops": func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
			_ = BudgetFrom(ctx).Charge(tokens, 11)
		},
		"fails without a class": func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
			if err := BudgetFrom(ctx).Charge(tokens, 11); err != nil {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, say(ec, err.Error())), nil)
			}
		},
		"meter not granted": func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
			if err := BudgetFrom(ctx).Charge("dollars", 1); err != nil {
				yield(nil, err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			a := startAgent(t, newExec(agent))

			task, err := a.send(ctx, "go", budgetMeta(map[string]int64{tokens: 10}, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
				Should(Equal(a2a.TaskStateFailed))
			final := a.get(ctx, a.plain, task.ID)
			g.Expect(failureClass(final)).To(Equal("BudgetExhausted"))
			g.Expect(budgetReport(final.Status.Message.Metadata)).To(Equal(&tethera2a.BudgetReportMetadata{
				Left: map[string]int64{tokens: 10},
			}), "a refused charge records nothing")
		})
	}
}

func TestDeadlineStopsTheTask(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec)

	deadline := time.Now().Add(300 * time.Millisecond)
	task, err := a.send(ctx, "work", budgetMeta(nil, &deadline))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(exec.stopped).Should(BeClosed(), "the executor's context ends at the deadline")
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		Should(Equal(a2a.TaskStateFailed))
	g.Expect(failureClass(a.get(ctx, a.plain, task.ID))).To(Equal("BudgetExhausted"))
}

func TestPassedDeadlineStartsNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec)

	deadline := time.Now().Add(-time.Second)
	task, err := a.send(ctx, "work", budgetMeta(map[string]int64{tokens: 1}, &deadline))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		Should(Equal(a2a.TaskStateFailed))
	g.Expect(failureClass(a.get(ctx, a.plain, task.ID))).To(Equal("BudgetExhausted"))
	g.Expect(exec.calls.Load()).To(BeZero())
}

func TestNegativeMeterIsRefused(t *testing.T) {
	g := NewWithT(t)
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec)

	_, err := a.send(context.Background(), "go", budgetMeta(map[string]int64{tokens: -1}, nil))
	g.Expect(err).To(MatchError(a2a.ErrInvalidParams))
	g.Expect(exec.calls.Load()).To(BeZero())
}

func TestChildHoldsLowerLeftUntilTheySettle(t *testing.T) {
	g := NewWithT(t)
	b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})

	g.Expect(b.reserve("a", map[string]int64{tokens: 60})).To(Succeed())
	g.Expect(b.reserve("a", map[string]int64{tokens: 60})).To(Succeed(), "a retry holds nothing more")
	g.Expect(b.reserve("b", map[string]int64{tokens: 50})).To(MatchError(ErrBudgetExhausted))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 40}))

	b.settle("a", map[string]int64{tokens: 25})
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 75}), "the unspent part comes back")
	g.Expect(b.Spent()).To(BeEmpty(), "a child's spend is not this task's own")

	g.Expect(b.reserve("c", map[string]int64{tokens: 10})).To(Succeed())
	b.settle("c", nil)
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 65}), "no report keeps the whole hold")
}
