/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/a2a"
)

// One Agent's pool runs at most its size; what waits goes cancels first,
// then reads and renewals, then sends, each in submission order. A renewal
// gets a slot only when one frees: it never preempts a running call.
func TestPoolRunsCancelsThenRenewalsThenSends(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	agent := types.NamespacedName{Namespace: "ns", Name: "agent"}
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	call := func(name string, kind Kind, block bool) Call {
		return Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: kind}, Agent: agent, PoolSize: 1,
			do: func(ctx context.Context) Answer {
				if block {
					<-release
				}
				mu.Lock()
				order = append(order, name+"/"+string(kind))
				mu.Unlock()
				return named(name)
			}}
	}
	g.Expect(d.Submit(call("busy", KindStart, true))).To(BeTrue())
	g.Eventually(func() bool {
		return d.State(Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "busy"}, Kind: KindStart}).Running
	}).Should(BeTrue())
	g.Expect(d.Submit(call("s1", KindStart, false))).To(BeTrue())
	g.Expect(d.Submit(call("s2", KindStart, false))).To(BeTrue())
	g.Expect(d.Submit(call("leased", KindGet, false))).To(BeTrue())
	g.Expect(d.Submit(call("stop", KindCancel, false))).To(BeTrue())
	g.Expect(d.Submit(call("s1", KindStart, false))).To(BeFalse(), "one call of a kind per Delegation")

	renewal := Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "leased"}, Kind: KindGet}
	g.Consistently(func() bool { return d.State(renewal).Running }, 200*time.Millisecond).Should(BeFalse(),
		"the pool is full: the renewal waits")
	stats := d.Stats()
	g.Expect(stats).To(HaveLen(1))
	g.Expect(stats[0].Running).To(Equal(1))
	g.Expect(stats[0].Queued).To(Equal(4))
	g.Expect(stats[0].OldestQueued).NotTo(BeZero())

	close(release)
	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}).Should(Equal([]string{"busy/start", "stop/cancel", "leased/get", "s1/start", "s2/start"}))
	res, ok := d.Take(renewal)
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Task.ID).To(Equal("leased"))
	g.Expect(res.Class).To(Equal(a2a.ClassAccepted), "every answer carries its classification")
	_, ok = d.Take(renewal)
	g.Expect(ok).To(BeFalse(), "a result is taken once")
	g.Eventually(d.Stats).Should(BeEmpty(), "an idle pool is dropped")
}

// Every call ends by its deadline: the Agent's timeout, capped by the
// operator's maximum, and for a scheduled read its interval from when it
// left.
func TestCallDeadlines(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Hour)
	agent := types.NamespacedName{Namespace: "ns", Name: "agent"}
	deadline := func(c Call) time.Duration {
		got := make(chan time.Duration, 1)
		c.Agent = agent
		c.do = func(ctx context.Context) Answer {
			dl, _ := ctx.Deadline()
			got <- time.Until(dl)
			return Answer{}
		}
		g.Expect(d.Submit(c)).To(BeTrue())
		return <-got
	}
	key := func(name string) Key { return Key{Delegation: types.NamespacedName{Name: name}, Kind: KindGet} }
	g.Expect(deadline(Call{Key: key("spec"), Timeout: 10 * time.Minute})).To(BeNumerically("~", 10*time.Minute, time.Second))
	d.MaxCallTimeout = 30 * time.Second
	g.Expect(deadline(Call{Key: key("capped"), Timeout: 10 * time.Minute})).To(BeNumerically("~", 30*time.Second, time.Second))
	g.Expect(deadline(Call{Key: key("renewal"), Timeout: 10 * time.Minute, Within: time.Second})).
		To(BeNumerically("~", time.Second, 500*time.Millisecond))
}

func TestCallTimeoutIsTheAgentsCappedByTheOperator(t *testing.T) {
	cases := []struct {
		asked, maximum, want time.Duration
	}{
		{0, 0, DefaultMaxCallTimeout},
		{0, time.Minute, time.Minute},
		{10 * time.Second, time.Minute, 10 * time.Second},
		{10 * time.Minute, time.Minute, time.Minute},
		{10 * time.Minute, 0, DefaultMaxCallTimeout},
	}
	for _, c := range cases {
		if got := CallTimeout(c.asked, c.maximum); got != c.want {
			t.Errorf("CallTimeout(%s, %s) = %s, want %s", c.asked, c.maximum, got, c.want)
		}
	}
}

// A read the reconciler asks for while the scheduler's read of the same task
// runs is not lost: the scheduler hands on only changed answers, so the
// reconciler's read is made once the scheduler's ends, and its answer is
// the reconciler's to take.
func TestReconcilerReadWaitsForTheSchedulersRead(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	key := Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "task"}, Kind: KindGet}
	agent := types.NamespacedName{Namespace: "ns", Name: "agent"}
	release := make(chan struct{})
	schedulerDone := make(chan Answer, 1)
	scheduled := Call{Key: key, Agent: agent, done: func(r Answer) { schedulerDone <- r },
		do: func(context.Context) Answer { <-release; return named("scheduler") }}
	g.Expect(d.Submit(scheduled)).To(BeTrue())
	g.Eventually(func() bool { return d.State(key).Running }).Should(BeTrue())

	asked := Call{Key: key, Agent: agent, do: func(context.Context) Answer { return named("reconciler") }}
	g.Expect(d.Submit(asked)).To(BeTrue(), "kept until the scheduler's read ends")
	g.Expect(d.Has(key)).To(BeTrue())
	g.Expect(d.Submit(asked)).To(BeTrue(), "asking again replaces the kept call")
	_, ok := d.Take(key)
	g.Expect(ok).To(BeFalse(), "nothing is answered yet")

	close(release)
	g.Expect((<-schedulerDone).Task.ID).To(Equal("scheduler"))
	g.Eventually(func() string {
		res, _ := d.Take(key)
		return taskID(res)
	}).Should(Equal("reconciler"))
	g.Expect(d.Has(key)).To(BeFalse())

	// The reconciler's own read on its way: a second one is refused, its
	// answer wakes the Delegation anyway.
	block := make(chan struct{})
	own := Call{Key: key, Agent: agent, do: func(context.Context) Answer { <-block; return named("own") }}
	g.Expect(d.Submit(own)).To(BeTrue())
	g.Expect(d.Submit(asked)).To(BeFalse())
	close(block)
	g.Eventually(func() string {
		res, _ := d.Take(key)
		return taskID(res)
	}).Should(Equal("own"))
}

// named is an answer with a task of that id.
func named(id string) Answer { return Answer{Task: &a2a.Task{ID: id}} }

func taskID(a Answer) string {
	if a.Task == nil {
		return ""
	}
	return a.Task.ID
}

// The memory limit bounds the calls in flight across all Agents: a call
// beyond it waits with room in its own pool, shows as not running, and runs
// once a call ends.
func TestMemoryLimitBoundsCallsAcrossAgents(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	d.SetMemoryLimit(budgetFor(2, 1<<20), 1<<20)
	g.Expect(d.InFlightLimit()).To(Equal(2))
	release := make(chan struct{})
	call := func(agent, name string) Call {
		return Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: KindGet},
			Agent: types.NamespacedName{Namespace: "ns", Name: agent},
			do:    func(context.Context) Answer { <-release; return named(name) }}
	}
	key := func(name string) Key {
		return Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: KindGet}
	}
	g.Expect(d.Submit(call("a", "one"))).To(BeTrue())
	g.Expect(d.Submit(call("b", "two"))).To(BeTrue())
	g.Eventually(func() bool { return d.State(key("one")).Running && d.State(key("two")).Running }).Should(BeTrue())
	g.Expect(d.Submit(call("c", "three"))).To(BeTrue())
	g.Consistently(func() bool { return d.State(key("three")).Running }, 200*time.Millisecond).Should(BeFalse(),
		"a third Agent's call waits for the budget")
	g.Expect(d.State(key("three")).Pending).To(BeTrue())
	close(release)
	g.Eventually(func() string { res, _ := d.Take(key("three")); return taskID(res) }).Should(Equal("three"))
}

// An agent whose reads time out is read less: the pool's read limit halves
// with each read the agent held until its deadline (never below one) and
// grows back as reads are answered; waiting renewals go in the order their
// next renewal is due.
func TestReadLimitBacksOffAndRecovers(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, 200*time.Millisecond)
	agent := types.NamespacedName{Namespace: "ns", Name: "slow"}
	read := func(name string, late bool) Call {
		return Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: KindGet}, Agent: agent, PoolSize: 8,
			do: func(ctx context.Context) Answer {
				if late { // the agent holds the read until its deadline
					<-ctx.Done()
					return Answer{Err: ctx.Err()}
				}
				return named(name)
			}}
	}
	limit := func() int { return d.ReadLimit(Key{Delegation: agent}) }
	hold := make(chan struct{})
	blocker := read("blocker", false)
	blocker.Kind = KindCancel                                                     // not a read: it keeps the pool, not a read slot
	blocker.do = func(context.Context) Answer { <-hold; return named("blocker") } // keeps the pool alive
	g.Expect(d.Submit(blocker)).To(BeTrue())
	g.Eventually(limit).Should(Equal(8))
	for i := range 3 {
		g.Expect(d.Submit(read(fmt.Sprintf("late-%d", i), true))).To(BeTrue())
		g.Eventually(func() bool {
			_, ok := d.Take(Key{Delegation: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("late-%d", i)}, Kind: KindGet})
			return ok
		}).Should(BeTrue())
	}
	g.Expect(limit()).To(Equal(1), "8 → 4 → 2 → 1")
	for i := range 20 {
		g.Expect(d.Submit(read(fmt.Sprintf("ok-%d", i), false))).To(BeTrue())
		g.Eventually(func() bool {
			_, ok := d.Take(Key{Delegation: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("ok-%d", i)}, Kind: KindGet})
			return ok
		}).Should(BeTrue())
	}
	g.Expect(limit()).To(BeNumerically(">", 3), "answered reads raise it again")

	// A read cut short by a deadline it spent waiting is not the agent's.
	before := limit()
	short := read("short", false)
	short.do = func(context.Context) Answer { return Answer{Err: context.DeadlineExceeded} }
	g.Expect(d.Submit(short)).To(BeTrue())
	g.Eventually(func() bool { _, ok := d.Take(short.Key); return ok }).Should(BeTrue())
	g.Expect(limit()).To(BeNumerically(">=", before))
	close(hold)

	// Renewals waiting for room go in the order their leases lapse.
	p := &pool{size: 1}
	now := time.Now()
	for i, in := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		c := read(fmt.Sprint(i), false)
		c.Lapses = now.Add(in)
		p.enqueue(&pending{call: c})
	}
	order := make([]time.Duration, 0, len(p.queues[1]))
	for _, q := range p.queues[1] {
		order = append(order, q.call.Lapses.Sub(now))
	}
	g.Expect(order).To(Equal([]time.Duration{time.Second, 2 * time.Second, 3 * time.Second}))
}

// A read that waited for room still has its whole time once it leaves: it
// is not sent only to be cut before the agent could answer.
func TestQueuedReadKeepsItsTimeFromWhenItLeaves(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Hour)
	agent := types.NamespacedName{Namespace: "ns", Name: "agent"}
	hold := make(chan struct{})
	blocker := Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "blocker"}, Kind: KindCancel},
		Agent: agent, PoolSize: 1, do: func(context.Context) Answer { <-hold; return named("blocker") }}
	g.Expect(d.Submit(blocker)).To(BeTrue())
	got := make(chan time.Duration, 1)
	read := Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: "read"}, Kind: KindGet}, Agent: agent,
		PoolSize: 1, Within: time.Second, do: func(ctx context.Context) Answer {
			dl, _ := ctx.Deadline()
			got <- time.Until(dl)
			return named("read")
		}}
	g.Expect(d.Submit(read)).To(BeTrue())
	time.Sleep(1500 * time.Millisecond) // longer than the read's own time
	close(hold)
	g.Eventually(got).Should(Receive(BeNumerically("~", time.Second, 300*time.Millisecond)))
}

// An agent that queues reads (answers that take more than half their time
// and more than twice its fastest answer) is read less, once per round: the
// reads in flight when it backed off count for no second back-off.
func TestSlowAnswersBackOffOncePerRound(t *testing.T) {
	g := NewWithT(t)
	p := &pool{size: 8}
	full := time.Second
	ok := Answer{Class: a2a.ClassAccepted}
	t0 := time.Now()
	p.readAnswered(ok, t0, 10*time.Millisecond, full)
	g.Expect(p.readAllowance()).To(Equal(8))
	p.readAnswered(ok, t0, 800*time.Millisecond, full)
	g.Expect(p.readAllowance()).To(Equal(6), "8 × 3/4")
	p.readAnswered(ok, t0, 800*time.Millisecond, full)
	g.Expect(p.readAllowance()).To(Equal(6), "a read that left before the back-off counts for none")
	p.readAnswered(ok, time.Now().Add(time.Millisecond), 800*time.Millisecond, full)
	g.Expect(p.readAllowance()).To(Equal(4), "6 × 3/4, one round later")

	// An agent slow at every read (no faster answer seen) is not backed off.
	even := &pool{size: 8}
	for range 5 {
		even.readAnswered(ok, time.Now(), 800*time.Millisecond, full)
	}
	g.Expect(even.readAllowance()).To(Equal(8))
}

// An eighth of the call places is kept for renewals and cancels: an Agent
// whose reads hold every ordinary place does not hold up another Agent's
// renewal.
func TestMemoryLimitKeepsPlacesForRenewals(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	d.SetMemoryLimit(budgetFor(8, 1<<20), 1<<20)
	g.Expect(d.InFlightLimit()).To(Equal(8))
	release := make(chan struct{})
	defer close(release)
	key := func(name string) Key {
		return Key{Delegation: types.NamespacedName{Namespace: "ns", Name: name}, Kind: KindGet}
	}
	read := func(agent, name string, leased bool) Call {
		return Call{Key: key(name), Agent: types.NamespacedName{Namespace: "ns", Name: agent}, PoolSize: 16, leased: leased,
			do: func(context.Context) Answer { <-release; return named(name) }}
	}
	for i := range 8 {
		g.Expect(d.Submit(read("bulky", fmt.Sprintf("poll-%d", i), false))).To(BeTrue())
	}
	running := func() int {
		n := 0
		for i := range 8 {
			if d.State(key(fmt.Sprintf("poll-%d", i))).Running {
				n++
			}
		}
		return n
	}
	g.Eventually(running).Should(Equal(7))
	g.Consistently(running, 200*time.Millisecond).Should(Equal(7), "ordinary calls hold at most 7 of the 8 places")
	g.Expect(d.Submit(read("steady", "renewal", true))).To(BeTrue())
	g.Eventually(func() bool { return d.State(key("renewal")).Running }).Should(BeTrue(), "the renewal takes the kept place")
}

// budgetFor is the --max-answer-bytes that gives calls places for calls
// of responseBytes (the other quarter is for streams).
func budgetFor(calls int, responseBytes int64) int64 {
	return (int64(calls)*responseBytes*4 + 2) / 3
}

// --max-answer-bytes is split between calls and streams: three quarters
// for calls of the response bound, a quarter for streams, at least one of
// each.
func TestMemoryPlacesSplitTheBudget(t *testing.T) {
	g := NewWithT(t)
	for _, c := range []struct {
		answerBytes, responseBytes int64
		calls, streams             int
	}{
		{DefaultAnswerBytes, 1 << 20, 48, 64},
		{256 << 20, 1 << 20, 192, 256},
		{DefaultAnswerBytes, 4 << 20, 12, 64},
		{1 << 20, 1 << 20, 1, 1},
		{budgetFor(8, 1<<20), 1 << 20, 8, 10},
	} {
		calls, streams := memoryPlaces(c.answerBytes, c.responseBytes)
		g.Expect([]int{calls, streams}).To(Equal([]int{c.calls, c.streams}), "%d bytes of %d", c.answerBytes, c.responseBytes)
	}
	d := NewDispatcher(0, time.Minute)
	d.SetMemoryLimit(DefaultAnswerBytes, 0)
	g.Expect([]int{d.InFlightLimit(), d.StreamLimit(), cap(d.cardPlaces), d.cardShare()}).To(Equal([]int{48, 64, 12, 3}))
	d.SetMemoryLimit(0, 0)
	g.Expect([]int{d.InFlightLimit(), d.StreamLimit()}).To(Equal([]int{0, 0}), "no bound")
	g.Expect(d.takeStreamPlace()).To(BeTrue())
}

// A steady trickle of calls, each queued after the one before has ended,
// runs on the pool's workers waiting for it, not on a new goroutine per
// call (whose stack would grow again through the HTTP path).
func TestPoolWorkersWaitForTheNextCall(t *testing.T) {
	g := NewWithT(t)
	d := NewDispatcher(0, time.Minute)
	agent := types.NamespacedName{Namespace: "ns", Name: "agent"}
	workers := map[string]bool{}
	for i := range 50 {
		done := make(chan struct{})
		g.Expect(d.Submit(Call{Key: Key{Delegation: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("d-", i)}, Kind: KindGet},
			Agent: agent, PoolSize: 2,
			do:   func(context.Context) Answer { workers[goroutineID()] = true; return Answer{} },
			done: func(Answer) { close(done) }})).To(BeTrue())
		<-done
	}
	g.Expect(len(workers)).To(BeNumerically("<=", 2), "50 calls ran on at most the pool's 2 workers")
	g.Eventually(d.Stats).Should(BeEmpty(), "idle workers are no load")
}

// goroutineID is the running goroutine's number, as its stack trace shows it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}
