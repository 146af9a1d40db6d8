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
	"k8s.io/utils/clock"
)

func TestLeaseOutOfRangeIsRefusedAndStartsNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		ttl  float64
		opts []Option
	}{
		"below 1s":          {ttl: 0.5},
		"zero":              {ttl: 0},
		"above default 1h":  {ttl: 3601},
		"above set maximum": {ttl: 11, opts: []Option{WithMaxLeaseTTL(10 * time.Second)}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			exec := newExec(blockUntilDone)
			a := startAgent(t, exec, tc.opts...)

			_, err := a.send(context.Background(), "work", leaseMeta(tc.ttl))
			g.Expect(err).To(MatchError(a2a.ErrInvalidParams))
			g.Expect(exec.calls.Load()).To(BeZero())
		})
	}
}

func TestLeaseIsGrantedAndRenewedOnlyWhenActivated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := startAgent(t, newExec(blockUntilDone))

	task, err := a.send(ctx, "work", leaseMeta(30))
	g.Expect(err).NotTo(HaveOccurred())
	granted := expiresAt(task)
	g.Expect(granted).To(BeTemporally("~", a.clock.Now().Add(30*time.Second), time.Millisecond))

	a.clock.SetTime(a.clock.Now().Add(5 * time.Second))
	g.Expect(expiresAt(a.get(ctx, a.plain, task.ID))).To(BeTemporally("==", granted), "a plain GetTask renews nothing")

	renewed := expiresAt(a.get(ctx, a.leased, task.ID))
	g.Expect(renewed).To(BeTemporally("~", granted.Add(5*time.Second), time.Millisecond))
	g.Expect(expiresAt(a.get(ctx, a.plain, task.ID))).To(BeTemporally("==", renewed), "the renewal holds")
}

func TestLapsedLeaseCancelsTheTask(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec)

	task, err := a.send(ctx, "work", leaseMeta(1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(exec.stopped).WithTimeout(100*time.Millisecond).ShouldNot(BeClosed(), "a live lease is left alone")

	a.clock.SetTime(a.clock.Now().Add(1500 * time.Millisecond))
	g.Eventually(exec.stopped).Should(BeClosed(), "the executor's context is cancelled")
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		Should(Equal(a2a.TaskStateCanceled))
	g.Expect(statusText(a.get(ctx, a.plain, task.ID))).To(ContainSubstring("lease expired"))
}

func TestLapsedLeaseCancelsTheTaskOnTheWallClock(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec, WithClock(clock.RealClock{}))

	task, err := a.send(ctx, "work", leaseMeta(1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		WithTimeout(3 * time.Second).Should(Equal(a2a.TaskStateCanceled))
	g.Expect(exec.stopped).To(BeClosed())
}

func TestLapsedLeaseCancelsATaskWaitingForInput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := startAgent(t, newExec(func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, nil), nil)
	}))

	task, err := a.send(ctx, "ask", leaseMeta(1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		Should(Equal(a2a.TaskStateInputRequired))

	a.clock.SetTime(a.clock.Now().Add(2 * time.Second))
	g.Eventually(func() a2a.TaskState { return a.get(ctx, a.plain, task.ID).Status.State }).
		Should(Equal(a2a.TaskStateCanceled))
}

func TestRenewedLeaseOutlivesItsFirstTTL(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec)

	task, err := a.send(ctx, "work", leaseMeta(1))
	g.Expect(err).NotTo(HaveOccurred())
	for range 3 {
		a.clock.SetTime(a.clock.Now().Add(700 * time.Millisecond))
		g.Expect(a.get(ctx, a.leased, task.ID)).NotTo(BeNil())
	}
	g.Consistently(exec.stopped).WithTimeout(100 * time.Millisecond).ShouldNot(BeClosed())
	g.Expect(a.get(ctx, a.plain, task.ID).Status.State).To(Equal(a2a.TaskStateWorking))
}

func TestMemoryLeaseStoreDoesNotReviveALapsedLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := NewMemoryLeaseStore()
	now := time.Now()
	g.Expect(s.Put(ctx, Lease{TaskID: "t", TTL: time.Second, ExpiresAt: now.Add(time.Second)})).To(Succeed())

	_, ok, err := s.Renew(ctx, "t", now.Add(2*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	lapsed, err := s.Expired(ctx, now.Add(2*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lapsed).To(HaveLen(1))
}
