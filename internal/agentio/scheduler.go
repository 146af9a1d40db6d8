/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
)

// Follow is a running task the scheduler reads back on its own cadence.
type Follow struct {
	// Target is the Agent and tenant of the task.
	Target Target
	// Read is the read repeated: a GetTask, with the lease extension when
	// the task is leased.
	Read ReadRequest
	// Interval is the time between reads: ttl/3 for a leased task, else the
	// Agent's pollInterval.
	Interval time.Duration
	// Seen is the Fingerprint of what the reconciler last applied; a read
	// that reports the same costs nothing beyond the call. Empty keeps the
	// one given before.
	Seen string
	// Since, when set, is when the agent last answered for the task (the
	// send): a newly followed task is first read one interval after it,
	// not one interval after the answer was applied.
	Since time.Time
}

// Scheduler keeps a due-time heap of every followed task and fires each
// read through its Agent's pool. A read whose answer differs from what the
// reconciler applied re-enqueues the Delegation with the answer; an
// unchanged answer (a plain renewal) costs no API write and no reconcile.
type Scheduler struct {
	Dispatcher *Dispatcher
	Clock      clock.WithTicker
	// Resume, when set, lists the running tasks this process knows from
	// its cache when Start begins (it just became its shard's leader).
	// They are followed before the loop's first turn and read at once,
	// shortest interval first, so a new leader renews every lease before
	// it reconciles anything (see resume).
	Resume func(ctx context.Context) map[types.NamespacedName]Follow

	mu    sync.Mutex
	items map[types.NamespacedName]*item
	// early holds ReadNow requests for tasks not followed yet (a
	// notification that came before the send's answer was applied).
	early map[types.NamespacedName]time.Time
	heap  dueHeap
	wake  chan struct{}
	// ctx is Start's: streams end with it.
	ctx context.Context
	// streams are the tasks followed by a stream (streams.go), and how many
	// each Agent has open.
	streams    map[types.NamespacedName]*stream
	streamsPer map[types.NamespacedName]int
	// peaks are the maps' sizes for shrinkmap.Delete.
	peaks struct{ items, early, streams int }
}

type item struct {
	key   types.NamespacedName
	f     Follow
	call  Call // f's read, on the Agent's pool
	due   time.Time
	index int // in the heap; -1 while its read runs
	// again: a notification came while the read ran, so the answer may
	// predate it; read once more as soon as this read is answered.
	again bool
	// renewed is when the agent last answered for the task (a read, or
	// the send): a leased task's lease runs from then.
	renewed time.Time
}

// NewScheduler builds a Scheduler whose reads go through d; a nil clk is the
// real clock. Resume is set by the caller when it needs one: the controller
// wires it to its cache after both are built.
func NewScheduler(d *Dispatcher, clk clock.WithTicker) *Scheduler {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Scheduler{
		Dispatcher: d, Clock: clk,
		items:      map[types.NamespacedName]*item{},
		early:      map[types.NamespacedName]time.Time{},
		streams:    map[types.NamespacedName]*stream{},
		streamsPer: map[types.NamespacedName]int{},
		wake:       make(chan struct{}, 1),
	}
}

// Track follows a task, or updates how it is followed. A newly followed
// task is first read one interval after f.Since (or from now); an interval
// that shrank is applied at once.
func (s *Scheduler) Track(key types.NamespacedName, f Follow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	var call Call
	if f.Target.Agent != nil {
		// The task is held until it settles: with the Agent's shared copy,
		// not the one its pass read.
		f.Target.Agent = s.Dispatcher.shared(f.Target.Agent)
		call = s.Dispatcher.readCall(key, f.Target, f.Read)
	}
	it, ok := s.items[key]
	if !ok {
		it = &item{key: key, f: f, call: call, due: now.Add(f.Interval), index: -1, renewed: now}
		if !f.Since.IsZero() && f.Since.Before(now) {
			it.due, it.renewed = f.Since.Add(f.Interval), f.Since
		}
		if at, ok := s.early[key]; ok {
			s.early = shrinkmap.Delete(s.early, key, &s.peaks.early)
			if now.Sub(at) < time.Minute {
				it.due = now
			}
		}
		s.items[key] = it
		heap.Push(&s.heap, it)
		scheduledTasks.Set(float64(len(s.items)))
		s.startStream(key, f)
		s.poke()
		return
	}
	if st, ok := s.streams[key]; !ok || !st.over {
		s.startStream(key, f)
	}
	if f.Seen == "" { // nothing applied this pass: keep what was
		f.Seen = it.f.Seen
	}
	it.f, it.call = f, call
	if due := now.Add(f.Interval); it.index >= 0 && due.Before(it.due) {
		it.due = due
		heap.Fix(&s.heap, it.index)
		s.poke()
	}
}

// resume follows tasks picked up from the cache by a new leader. When each
// was last read is not known here (the old leader renewed it from memory),
// so every one is due now; among tasks due at once the heap fires the
// shortest interval first, the lease that runs out first. A task already
// followed keeps its due time.
func (s *Scheduler) resume(follows map[types.NamespacedName]Follow) {
	now := s.Clock.Now()
	for key, f := range follows {
		f.Since = now.Add(-f.Interval)
		s.Track(key, f)
	}
	resumedTasks.Add(float64(len(follows)))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ReadNow makes a followed task due at once (a push notification said it
// changed). A task whose read is running is read again once it is answered.
// A task not followed yet is read as soon as it is. It reports whether the
// task is followed.
func (s *Scheduler) ReadNow(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	switch {
	case !ok:
		if len(s.early) > 10000 { // notifications for tasks never followed
			clear(s.early)
		}
		s.early[key] = s.Clock.Now()
		return false
	case it.index >= 0:
		it.due = s.Clock.Now()
		heap.Fix(&s.heap, it.index)
		s.poke()
	default:
		it.again = true
	}
	return true
}

// Untrack stops following a task (settled, detached, deleted).
func (s *Scheduler) Untrack(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[key]
	if !ok {
		return
	}
	s.items = shrinkmap.Delete(s.items, key, &s.peaks.items)
	s.stopStream(key)
	if it.index >= 0 {
		heap.Remove(&s.heap, it.index)
	}
	scheduledTasks.Set(float64(len(s.items)))
}

// Renewed is when the agent last answered for a followed task (a read, or
// the send): a leased task's lease runs from then. Zero when not followed.
func (s *Scheduler) Renewed(key types.NamespacedName) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it, ok := s.items[key]; ok {
		return it.renewed
	}
	return time.Time{}
}

// Tracked reports whether a task is followed (for tests and the bench).
func (s *Scheduler) Tracked(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.items[key]
	return ok
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the loop until ctx ends (a manager Runnable).
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	if s.Resume != nil {
		s.resume(s.Resume(ctx))
	}
	var untaken []types.NamespacedName
	for {
		s.mu.Lock()
		wait := time.Hour
		now := s.Clock.Now()
		for s.heap.Len() > 0 {
			top := s.heap[0]
			if top.due.After(now) {
				wait = top.due.Sub(now)
				break
			}
			heap.Pop(&s.heap)
			if s.fire(top, now) {
				untaken = append(untaken, top.key)
			}
		}
		s.mu.Unlock()
		for _, key := range untaken {
			s.Dispatcher.wake(key, false)
		}
		untaken = untaken[:0]
		t := s.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// fire submits the read; it is called with s.mu held and the item popped.
// It reports a poll skipped because the last answer was not taken: the
// caller wakes that Delegation again (once s.mu is released), since the
// wake that came with the answer may have found the reconciler busy with
// another call's result, and nothing else would bring it back.
// The next read is due one interval after this one was due, so a slow
// answer does not push every later renewal back. Once sent, the read has
// one interval to be answered; a renewal waits for room in the order its
// lease lapses (a lease runs for ttl, three intervals, from the last answer).
func (s *Scheduler) fire(it *item, now time.Time) (untaken bool) {
	next := it.due.Add(it.f.Interval)
	if !next.After(now) {
		next = now.Add(it.f.Interval)
	}
	c := it.call
	if !it.f.Read.Lease && s.Dispatcher.answerWaiting(c.Key) {
		// The reconciler has not taken the last read's answer yet (a busy
		// operator): a poll now would only ask the agent again for what is
		// already here. A renewal is still made: the lease needs it.
		it.due = next
		heap.Push(&s.heap, it)
		return true
	}
	c.Within = it.f.Interval
	if it.f.Read.Lease {
		c.Lapses = it.renewed.Add(3 * it.f.Interval)
	}
	c.poll = !it.f.Read.Lease
	c.due, c.leased = it.due, it.f.Read.Lease
	seen := it.f.Seen
	c.done = func(res Answer) { s.answered(it, seen, next, res) }
	if !s.Dispatcher.Submit(c) {
		// A read of the reconciler's own is on its way and may have been
		// sent before what made this read due: look again shortly.
		it.due = minTime(next, now.Add(time.Second))
		heap.Push(&s.heap, it)
	}
	return false
}

// answered puts the task back on the heap. A read answered after the next
// one was due makes the next one due an interval after the answer, not at
// once: a late answer is not asked for again on top of itself. A renewal
// the agent did not answer is tried again a quarter interval on (at least a
// second), in its lease's order, since that lease is now the closest to
// lapsing.
func (s *Scheduler) answered(it *item, seen string, next time.Time, res Answer) {
	s.mu.Lock()
	cur, ok := s.items[it.key]
	if ok && cur == it && it.index < 0 {
		now := s.Clock.Now()
		unanswered := res.Err != nil && !a2a.IsTaskNotFound(res.Err) && res.Class != a2a.ClassRefused
		switch {
		case unanswered && it.f.Read.Lease:
			next = minTime(next, now.Add(max(it.f.Interval/4, time.Second)))
		case !unanswered:
			it.renewed = now
			if now.After(next) {
				next = now.Add(it.f.Interval)
			}
		}
		it.due = next
		if it.again {
			it.again = false
			it.due = now
		}
		heap.Push(&s.heap, it)
		if it.index == 0 {
			// The loop's timer is set for the read first due; only a read
			// due before it needs the loop (not one wake per renewal).
			s.poke()
		}
	}
	s.mu.Unlock()
	if !ok || cur != it {
		return // untracked while the read ran
	}
	if Fingerprint(res.Task, res.Err) == seen {
		return
	}
	s.Dispatcher.deliver(Key{Delegation: it.key, Kind: KindGet}, res)
}

type dueHeap []*item

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].f.Interval < h[j].f.Interval
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}
