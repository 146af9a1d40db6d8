/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// A renewal that only moved the lease's expiry must cost nothing; anything
// the Delegation's status shows must make a difference.
func TestFingerprintTellsChangesFromRenewals(t *testing.T) {
	base := func() *a2a.Task {
		return &a2a.Task{ID: "t1", State: a2a.StateWorking, StatusText: "thinking",
			LeaseExpiresAt: time.Unix(1000, 0), Usage: &a2a.Usage{Spent: map[string]int64{"tokens": 10}}}
	}
	same := []struct {
		name   string
		change func(*a2a.Task)
	}{
		{"lease renewed", func(t *a2a.Task) { t.LeaseExpiresAt = time.Unix(2000, 0) }},
		{"submitted reads as working", func(t *a2a.Task) { t.State = a2a.StateSubmitted }},
		{"message ids", func(t *a2a.Task) { t.MessageIDs = []string{"m1"} }},
		// Status keeps a result only once the task ended.
		{"an artifact before the end", func(t *a2a.Task) { t.Artifacts, t.ResultText = []a2a.Artifact{{}}, "partial" }},
	}
	for _, c := range same {
		t.Run(c.name, func(t *testing.T) {
			changed := base()
			c.change(changed)
			if Fingerprint(changed, nil) != Fingerprint(base(), nil) {
				t.Errorf("fingerprint changed; want a renewal to cost nothing")
			}
		})
	}
	different := []struct {
		name   string
		change func(*a2a.Task)
	}{
		{"state", func(t *a2a.Task) { t.State = a2a.StateCompleted }},
		{"status text", func(t *a2a.Task) { t.StatusText = "done thinking" }},
		{"failure class", func(t *a2a.Task) { t.FailureClass = "quota" }},
		{"lease dropped", func(t *a2a.Task) { t.LeaseExpiresAt = time.Time{} }},
		{"spend", func(t *a2a.Task) { t.Usage.Spent["tokens"] = 11 }},
	}
	for _, c := range different {
		t.Run(c.name, func(t *testing.T) {
			changed := base()
			c.change(changed)
			if Fingerprint(changed, nil) == Fingerprint(base(), nil) {
				t.Errorf("fingerprint unchanged; want the change to reach status")
			}
		})
	}
	ended := func() *a2a.Task { t := base(); t.State = a2a.StateCompleted; return t }
	for name, change := range map[string]func(*a2a.Task){
		"result":    func(t *a2a.Task) { t.ResultText = "42" },
		"artifacts": func(t *a2a.Task) { t.Artifacts = []a2a.Artifact{{}} },
	} {
		changed := ended()
		change(changed)
		if Fingerprint(changed, nil) == Fingerprint(ended(), nil) {
			t.Errorf("%s of an ended task: fingerprint unchanged", name)
		}
	}
	notFound := &a2a.Error{Kind: a2a.KindRefused, Reason: a2a.ReasonTaskNotFound}
	if Fingerprint(nil, notFound) == Fingerprint(nil, errors.New("connection refused")) {
		t.Errorf("a lost task and a failed call have one fingerprint")
	}
	if Fingerprint(nil, errors.New("connection refused")) == Fingerprint(base(), nil) {
		t.Errorf("a failed call and a task have one fingerprint")
	}
}

// A task is first read one interval after the send was answered, not one
// interval after a busy reconciler got round to applying the answer.
func TestFirstReadCountsFromTheSendsAnswer(t *testing.T) {
	now := time.Unix(5000, 0)
	s := NewScheduler(NewDispatcher(0, 0), clocktesting.NewFakeClock(now))
	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	cases := []struct {
		name  string
		since time.Time
		want  time.Time
	}{
		{"answered just now", now, now.Add(10 * time.Second)},
		{"answered 8s ago", now.Add(-8 * time.Second), now.Add(2 * time.Second)},
		{"answered 25s ago: overdue, read at once", now.Add(-25 * time.Second), now.Add(-15 * time.Second)},
		{"unknown answer time", time.Time{}, now.Add(10 * time.Second)},
	}
	for _, c := range cases {
		s.Track(key(c.name), Follow{Interval: 10 * time.Second, Since: c.since})
		if got := s.items[key(c.name)].due; !got.Equal(c.want) {
			t.Errorf("%s: first read due %s, want %s", c.name, got.Sub(now), c.want.Sub(now))
		}
	}
	// Following a task again does not move its read later.
	s.Track(key("answered 8s ago"), Follow{Interval: 10 * time.Second, Since: now})
	if got := s.items[key("answered 8s ago")].due; !got.Equal(now.Add(2 * time.Second)) {
		t.Errorf("tracked again: due %s, want 2s", got.Sub(now))
	}
}

// A late answer is not asked for again on top of itself: the next read is
// due an interval after it. A renewal the agent did not answer is tried
// again a quarter interval on, and renewals wait in the order their leases
// lapse (three intervals after the agent last answered).
func TestNextReadAfterLateAndMissingAnswers(t *testing.T) {
	now := time.Unix(5000, 0)
	clk := clocktesting.NewFakeClock(now)
	s := NewScheduler(NewDispatcher(0, 0), clk)
	key := types.NamespacedName{Namespace: "ns", Name: "leased"}
	interval := 10 * time.Second
	s.Track(key, Follow{Interval: interval, Read: ReadRequest{TaskID: "t", Lease: true}, Since: now})
	it := s.items[key]
	if want := now.Add(3 * interval); !it.renewed.Add(3 * it.f.Interval).Equal(want) {
		t.Errorf("lease lapses at %s, want %s", it.renewed.Add(3*interval).Sub(now), want.Sub(now))
	}
	s.mu.Lock()
	s.heap.Pop() // as the loop does before it fires the read
	s.mu.Unlock()

	answer := Answer{Task: &a2a.Task{ID: "t", State: a2a.StateWorking}, Class: a2a.ClassAccepted}
	seen := Fingerprint(answer.Task, nil)
	clk.SetTime(now.Add(25 * time.Second)) // answered after the next read was due (20s)
	s.answered(it, seen, now.Add(20*time.Second), answer)
	if want := now.Add(35 * time.Second); !it.due.Equal(want) {
		t.Errorf("after a late answer: due %s, want %s", it.due.Sub(now), want.Sub(now))
	}
	if !it.renewed.Equal(now.Add(25 * time.Second)) {
		t.Errorf("renewed at %s, want 25s", it.renewed.Sub(now))
	}

	s.mu.Lock()
	s.heap.Pop()
	s.mu.Unlock()
	clk.SetTime(now.Add(45 * time.Second))
	failed := Answer{Err: context.DeadlineExceeded, Class: a2a.Classify(context.DeadlineExceeded)}
	s.answered(it, Fingerprint(nil, failed.Err), now.Add(55*time.Second), failed)
	if want := now.Add(45*time.Second + interval/4); !it.due.Equal(want) {
		t.Errorf("after a missing answer: due %s, want %s", it.due.Sub(now), want.Sub(now))
	}
	if !it.renewed.Equal(now.Add(25 * time.Second)) {
		t.Errorf("a missing answer renews nothing: renewed at %s, want 25s", it.renewed.Sub(now))
	}
}

// A poll whose last answer the reconciler has not taken yet is not made:
// the agent would only be asked again for what is already here. A renewal
// is made all the same.
func TestNoPollOnTopOfAnUntakenAnswer(t *testing.T) {
	now := time.Unix(5000, 0)
	d := NewDispatcher(0, 0)
	s := NewScheduler(d, clocktesting.NewFakeClock(now))
	for _, leased := range []bool{false, true} {
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("leased-%t", leased)}
		s.Track(key, Follow{Interval: 10 * time.Second, Read: ReadRequest{TaskID: "t", Lease: leased}})
		it := s.items[key]
		it.call.Key = Key{Delegation: key, Kind: KindGet}
		it.call.Agent = types.NamespacedName{Namespace: "ns", Name: "agent"}
		it.call.do = func(ctx context.Context) Answer { <-ctx.Done(); return Answer{Err: ctx.Err()} } // answers only at its deadline
		d.results[Key{Delegation: key, Kind: KindGet}] = Answer{Task: &a2a.Task{ID: "t"}}
		due := it.due
		s.mu.Lock()
		heap.Remove(&s.heap, it.index)
		untaken := s.fire(it, due)
		s.mu.Unlock()
		if untaken == leased {
			t.Errorf("leased %t: fire reported an untaken answer %t, want %t (the Delegation is woken to take it)", leased, untaken, !leased)
		}
		_, made := d.calls[Key{Delegation: key, Kind: KindGet}]
		if made != leased {
			t.Errorf("leased %t: read made %t, want %t", leased, made, leased)
		}
		if !leased && !it.due.Equal(due.Add(10*time.Second)) {
			t.Errorf("the skipped poll is due %s after it was skipped, want one interval", it.due.Sub(due))
		}
	}
}

// A new leader reads every task it resumes at once, the shortest interval
// (the lease that runs out first) ahead of longer ones and of polls; a task
// it already followed keeps its own due time.
func TestResumedTasksAreDueAtOnceShortestIntervalFirst(t *testing.T) {
	now := time.Unix(5000, 0)
	s := NewScheduler(NewDispatcher(0, 0), clocktesting.NewFakeClock(now))
	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }
	s.Track(key("followed"), Follow{Interval: 5 * time.Second, Since: now})
	s.resume(map[types.NamespacedName]Follow{
		key("poll"):     {Interval: 10 * time.Minute},
		key("ttl-60s"):  {Interval: 20 * time.Second},
		key("ttl-15s"):  {Interval: 5 * time.Second},
		key("ttl-30s"):  {Interval: 10 * time.Second},
		key("followed"): {Interval: 5 * time.Second},
	})
	var order []string
	for s.heap.Len() > 0 {
		it := heap.Pop(&s.heap).(*item)
		if it.key.Name == "followed" {
			if want := now.Add(5 * time.Second); !it.due.Equal(want) {
				t.Errorf("an already followed task moved to %s, want it kept at 5s", it.due.Sub(now))
			}
			continue
		}
		if !it.due.Equal(now) {
			t.Errorf("%s: due %s, want now", it.key.Name, it.due.Sub(now))
		}
		order = append(order, it.key.Name)
	}
	if want := []string{"ttl-15s", "ttl-30s", "ttl-60s", "poll"}; !slices.Equal(order, want) {
		t.Errorf("read order %v, want %v", order, want)
	}
}

// Followed tasks hold their Agent until they settle: the tasks of one Agent
// hold one copy of each version of it, not the copy each pass read.
func TestFollowedTasksShareTheirAgent(t *testing.T) {
	s := NewScheduler(NewDispatcher(0, 0), clocktesting.NewFakeClock(time.Unix(5000, 0)))
	agentAt := func(rv string) *v1alpha1.Agent {
		return &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "u1", ResourceVersion: rv}}
	}
	follow := func(name, rv string) *v1alpha1.Agent {
		key := types.NamespacedName{Namespace: "ns", Name: name}
		s.Track(key, Follow{Target: Target{Agent: agentAt(rv)}, Interval: time.Second, Read: ReadRequest{TaskID: name}})
		return s.items[key].f.Target.Agent
	}
	first := follow("a", "1")
	if follow("b", "1") != first {
		t.Errorf("two tasks of one Agent version hold two copies of it")
	}
	if newer := follow("c", "2"); newer == first || follow("a", "2") != newer {
		t.Errorf("a new version of the Agent is not the one shared from then on")
	}
}
