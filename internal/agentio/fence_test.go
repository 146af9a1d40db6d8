/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/a2a"
)

var fenceAgent = types.NamespacedName{Namespace: "ns", Name: "agent"}

// fakeCall is a call of kind to Delegation name that records that it ran
// and, with hold, waits for hold to close first.
func fakeCall(name string, kind Kind, ran *atomic.Int32, hold chan struct{}, answer Answer) Call {
	return Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: kind}, Agent: fenceAgent, PoolSize: 1,
		do: func(context.Context) Answer {
			if hold != nil {
				<-hold
			}
			ran.Add(1)
			return answer
		}}
}

type fence struct{ holds atomic.Bool }

func (f *fence) Holds() bool { return f.holds.Load() }

// A force-deleted Delegation's queued send never leaves: Forget drops the
// calls that have not left, not only the answers.
func TestForgetDropsQueuedCalls(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	var busyRan, goneRan atomic.Int32
	hold := make(chan struct{})
	g.Expect(d.Submit(fakeCall("busy", KindStart, &busyRan, hold, named("b")))).To(BeTrue())
	g.Eventually(func() bool {
		return d.State(Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "busy"}, Kind: KindStart}).Running
	}).Should(BeTrue())
	gone := fakeCall("gone", KindStart, &goneRan, nil, named("g"))
	g.Expect(d.Submit(gone)).To(BeTrue())
	g.Expect(d.Has(gone.Key)).To(BeTrue())

	d.Forget(gone.Delegation)
	g.Expect(d.Has(gone.Key)).To(BeFalse())
	close(hold)
	g.Eventually(busyRan.Load).Should(Equal(int32(1)))
	g.Eventually(d.Stats).Should(BeEmpty())
	g.Expect(goneRan.Load()).To(BeZero(), "the forgotten Delegation's send left")
}

// A cancel that comes while its Delegation's send is on its way waits for
// that send and then cancels the task it answered with; a send still
// queued is dropped; a send that would leave while a cancel is pending or
// answered never leaves.
func TestCancelAndSendAreSerialised(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	var sendRan, cancelRan atomic.Int32
	hold := make(chan struct{})
	send := fakeCall("child", KindStart, &sendRan, hold, named("task-1"))
	g.Expect(d.Submit(send)).To(BeTrue())
	g.Eventually(func() bool { return d.State(send.Key).Running }).Should(BeTrue())

	cancelled := make(chan string, 1)
	cancel := fakeCall("child", KindCancel, &cancelRan, nil, Answer{})
	cancel.do = func(context.Context) Answer {
		cancelRan.Add(1)
		cancelled <- d.sentTask(cancel.Delegation)
		return Answer{}
	}
	d.mu.Lock()
	g.Expect(d.cancelAfter(cancel)).To(BeTrue())
	g.Expect(d.cancelAfter(cancel)).To(BeFalse(), "one cancel of a Delegation at a time")
	d.mu.Unlock()
	g.Expect(d.State(cancel.Key).Pending).To(BeTrue(), "the waiting cancel counts as pending")
	g.Consistently(cancelRan.Load, 100*time.Millisecond).Should(BeZero(), "the cancel ran beside the send")

	close(hold)
	g.Eventually(cancelled).Should(Receive(Equal("task-1")), "the cancel reaches the task the send started")
	g.Eventually(func() bool { _, ok := d.Peek(cancel.Key); return ok }).Should(BeTrue())

	// The cancel's answer is not taken yet: a send now does not leave.
	var lateRan atomic.Int32
	_, _ = d.Take(send.Key)
	late := fakeCall("child", KindStart, &lateRan, nil, named("task-2"))
	g.Expect(d.Submit(late)).To(BeTrue())
	g.Eventually(func() bool { _, ok := d.Peek(late.Key); return ok }).Should(BeTrue())
	res, _ := d.Take(late.Key)
	g.Expect(res.Class).To(Equal(a2a.ClassNotMade))
	g.Expect(errors.Is(res.Err, errCancelled)).To(BeTrue(), "%v", res.Err)
	g.Expect(lateRan.Load()).To(BeZero(), "a send left after the cancel")
}

// Calls that start or end work at an agent leave only while the fence
// holds, decided as each leaves; reads go on. Once Start's context ends
// nothing leaves, and Start returns only after the calls on their way
// ended, so the Lease is given back after them.
func TestFenceAndStopAreDecidedAsACallLeaves(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	f := &fence{}
	d.Fence = f
	var ran atomic.Int32
	for _, kind := range []Kind{KindStart, KindReply, KindCancel} {
		c := fakeCall("fenced-"+string(kind), kind, &ran, nil, named("x"))
		g.Expect(d.Submit(c)).To(BeTrue())
		g.Eventually(func() bool { _, ok := d.Peek(c.Key); return ok }).Should(BeTrue())
		res, _ := d.Take(c.Key)
		g.Expect(errors.Is(res.Err, ErrFenced)).To(BeTrue(), "%s: %v", kind, res.Err)
		g.Expect(res.Class).To(Equal(a2a.ClassNotMade))
	}
	g.Expect(ran.Load()).To(BeZero(), "a fenced call left")
	read := fakeCall("read", KindGet, &ran, nil, named("r"))
	g.Expect(d.Submit(read)).To(BeTrue())
	g.Eventually(ran.Load).Should(Equal(int32(1)), "reads are not fenced")

	f.holds.Store(true)
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = d.Start(ctx); close(stopped) }()
	hold := make(chan struct{})
	onItsWay := fakeCall("on-its-way", KindStart, &ran, hold, named("w"))
	g.Expect(d.Submit(onItsWay)).To(BeTrue())
	g.Eventually(func() bool { return d.State(onItsWay.Key).Running }).Should(BeTrue())
	queued := fakeCall("queued", KindStart, &ran, nil, named("q"))
	g.Expect(d.Submit(queued)).To(BeTrue())

	stop()
	g.Consistently(stopped, 100*time.Millisecond).ShouldNot(BeClosed(), "Start returned with a call on its way")
	close(hold)
	g.Eventually(stopped).Should(BeClosed())
	res, ok := d.Take(onItsWay.Key)
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Task.ID).To(Equal("w"), "the call on its way was awaited and its answer kept")
	g.Eventually(func() bool { _, ok := d.Peek(queued.Key); return ok }).Should(BeTrue())
	res, _ = d.Take(queued.Key)
	g.Expect(errors.Is(res.Err, ErrFenced)).To(BeTrue(), "a queued call left after the stop: %v", res.Err)
	g.Expect(ran.Load()).To(Equal(int32(2)))
}

// A send that waited for room past the time its recorded deadline allowed
// it to leave never leaves: it is answered as never made.
func TestASendPastItsLeaveByNeverLeaves(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	var ran atomic.Int32
	hold := make(chan struct{})
	g.Expect(d.Submit(fakeCall("busy", KindStart, &ran, hold, named("b")))).To(BeTrue())
	late := fakeCall("late", KindStart, &ran, nil, named("l"))
	late.sends, late.leaveBy = true, time.Now().Add(50*time.Millisecond)
	g.Expect(d.Submit(late)).To(BeTrue())
	time.Sleep(100 * time.Millisecond)
	close(hold)
	g.Eventually(func() bool { _, ok := d.Peek(late.Key); return ok }).Should(BeTrue())
	res, _ := d.Take(late.Key)
	g.Expect(errors.Is(res.Err, errLeaveByPassed)).To(BeTrue(), "%v", res.Err)
	g.Expect(res.Class).To(Equal(a2a.ClassNotMade))
	g.Expect(ran.Load()).To(Equal(int32(1)), "only the busy call ran")
}

// A look-up that finds no task proves the send never started only after
// the send's deadline: this process's own when it made the send, else the
// one recorded with it, or one call after this process began to lead when
// the send was made by a build that fences its calls.
func TestLookUpProvesAfterTheSendsDeadline(t *testing.T) {
	now := time.Now()
	key := types.NamespacedName{Namespace: "ns", Name: "d"}
	lookUp := func(proofAfter time.Time, fenced bool) Call {
		return Call{Key: Key{Delegation: key, Kind: KindStart}, Timeout: 10 * time.Second, lookUp: true,
			proofAfter: proofAfter, fencedSend: fenced}
	}
	cases := []struct {
		name         string
		ownDeadline  time.Time // zero: this process made no send
		leadingSince time.Time
		call         Call
		want         bool
	}{
		{"a successor, before the recorded deadline", time.Time{}, now.Add(-time.Hour), lookUp(now.Add(time.Minute), false), false},
		{"a successor, after the recorded deadline", time.Time{}, now, lookUp(now.Add(-time.Second), false), true},
		{"a successor leading for longer than a call, the send fenced", time.Time{}, now.Add(-time.Minute), lookUp(now.Add(time.Minute), true), true},
		{"a successor that just began to lead, the send fenced", time.Time{}, now, lookUp(now.Add(time.Minute), true), false},
		{"this process's own send, its call over", now.Add(-time.Minute), now.Add(-time.Hour), lookUp(now.Add(time.Minute), false), true},
		{"this process's own send, within the listing lag", now.Add(-time.Second), now.Add(-time.Hour), lookUp(time.Time{}, false), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := NewDispatcher(0, time.Minute)
			d.leadingSince = tc.leadingSince
			if !tc.ownDeadline.IsZero() {
				d.sends[key] = SendRecord{Deadline: tc.ownDeadline}
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			g.Expect(d.lookedUp(key, now, false, d.proofAfter(tc.call))).To(Equal(tc.want))
		})
	}
}
