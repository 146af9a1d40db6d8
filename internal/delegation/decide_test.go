/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// now is the fixed time every decision in these tests is made at.
var now = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

// change adjusts the observation a case starts from.
type change func(*Observation)

// observe builds what the operator sees of a fresh Delegation for Agent
// "echo", without parent, with the Agent found and Ready, then applies the
// changes in order.
func observe(changes ...change) Observation {
	o := Observation{
		Now: now,
		Spec: &v1alpha1.DelegationSpec{
			AgentRef: &v1alpha1.AgentRef{Name: "echo"},
			Message:  &v1alpha1.Message{Text: "summarise the report"},
		},
		Status: &v1alpha1.DelegationStatus{},
		Agent:  Agent{Found: true, Ready: true},
	}
	for _, c := range changes {
		c(&o)
	}
	return o
}

func inPhase(p v1alpha1.Phase) change {
	return func(o *Observation) { o.Status.Phase = p }
}

// following is a task that was sent, has a task id and is in phase p.
func following(p v1alpha1.Phase) change {
	return func(o *Observation) {
		o.Status.Phase = p
		o.Status.TaskID = "task-1"
	}
}

// sending is a send that began at since and has no task id yet.
func sending(since time.Time) change {
	return func(o *Observation) {
		o.Status.Phase = v1alpha1.PhaseRunning
		t := metav1.NewTime(since)
		o.Status.SendStarted = &t
	}
}

func withParent(p Parent) change {
	return func(o *Observation) {
		o.Spec.ParentRef = &v1alpha1.LocalRef{Name: "lead"}
		o.Parent = &p
	}
}

func detachPolicy(o *Observation) { o.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach }
func cancelPolicy(o *Observation) { o.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyCancel }
func cancelInSpec(o *Observation) { o.Spec.Cancel = true }
func detachInSpec(o *Observation) { o.Spec.Detach = true }

func adopting(o *Observation) { o.Spec.Message, o.Spec.TaskID = nil, "task-0" }

func ownDeadline(d time.Time) change {
	return func(o *Observation) {
		t := metav1.NewTime(d)
		o.Status.Deadline = &t
	}
}

func treeError(msg string) change {
	return func(o *Observation) { o.TreeError = msg }
}

func agent(found, ready bool) change {
	return func(o *Observation) { o.Agent = Agent{Found: found, Ready: ready} }
}

// sharedNotGranted: the Agent is in namespace "platform", whose grants do
// not admit the Delegation's namespace.
func sharedNotGranted(o *Observation) {
	o.Spec.AgentRef.Namespace = "platform"
	o.Agent = Agent{NotGranted: true}
}

func asGroup(o *Observation) {
	o.Spec.AgentRef, o.Spec.Message = nil, nil
	o.Agent = Agent{}
}

func withChildren(c v1alpha1.ChildCounts) change {
	return func(o *Observation) { o.Children = c }
}

// Parents as a child sees them.
func parentIn(p v1alpha1.Phase) Parent { return Parent{Found: true, Phase: p} }

var (
	parentMissing  = Parent{}
	parentRunning  = parentIn(v1alpha1.PhaseRunning)
	parentDeleting = Parent{Found: true, Deleting: true, Owns: true, Phase: v1alpha1.PhaseRunning}
	parentExpired  = Parent{Found: true, Phase: v1alpha1.PhaseRunning, Deadline: now.Add(-time.Second)}
)

// expect is the part of a Step a case pins; message, when set, must appear in
// the outcome message.
type expect struct {
	kind    StepKind
	next    ReadNext
	phase   v1alpha1.Phase
	reason  string
	class   v1alpha1.FailureClass
	message string
}

func (e expect) check(g *WithT, s Step) {
	g.Expect(s.Kind).To(Equal(e.kind), "kind")
	e.checkRecord(g, s.Record())
}

func (e expect) checkRead(g *WithT, r Read) {
	g.Expect(r.Next).To(Equal(e.next), "next")
	e.checkRecord(g, r.Record)
}

func (e expect) checkRecord(g *WithT, s Record) {
	g.Expect(s.Phase).To(Equal(e.phase), "phase")
	g.Expect(s.Outcome.Reason).To(Equal(e.reason), "reason")
	g.Expect(s.Outcome.FailureClass).To(Equal(e.class), "failure class")
	if e.message != "" {
		g.Expect(s.Outcome.Message).To(ContainSubstring(e.message), "message")
	}
}

// Expected steps, named by what the controller does.
var (
	start    = expect{kind: StepStart, phase: v1alpha1.PhaseRunning}
	follow   = func(p v1alpha1.Phase) expect { return expect{kind: StepFollow, phase: p} }
	cancelAs = func(reason string) expect {
		return expect{kind: StepCancel, phase: v1alpha1.PhaseCanceled, reason: reason}
	}
	deadlineFailure = expect{kind: StepCancel, phase: v1alpha1.PhaseFailed, reason: ReasonDeadline,
		class: v1alpha1.FailureBudgetExhausted, message: "the deadline passed at " + now.Add(-time.Second).Format(time.RFC3339)}
	waitFor = func(reason, message string) expect {
		return expect{kind: StepWait, phase: v1alpha1.PhasePending, reason: reason, message: message}
	}
	detached     = expect{kind: StepDetach, phase: v1alpha1.PhaseDetached, reason: ReasonDetached}
	groupRunning = expect{kind: StepGroup, phase: v1alpha1.PhaseRunning, reason: ReasonWaitingChildren}
)

func TestGate(t *testing.T) {
	running := following(v1alpha1.PhaseRunning)
	inputRequired := following(v1alpha1.PhaseInputRequired)
	authRequired := following(v1alpha1.PhaseAuthRequired)
	passed := ownDeadline(now.Add(-time.Second))

	tests := []struct {
		name string
		obs  Observation
		want expect
	}{
		// Settled phases are final.
		{"a Succeeded Delegation is left alone", observe(following(v1alpha1.PhaseSucceeded), cancelInSpec),
			expect{kind: StepNone, phase: v1alpha1.PhaseSucceeded}},
		{"a Failed Delegation is left alone", observe(following(v1alpha1.PhaseFailed), withParent(parentDeleting)),
			expect{kind: StepNone, phase: v1alpha1.PhaseFailed}},
		{"a Canceled Delegation is left alone", observe(following(v1alpha1.PhaseCanceled), passed),
			expect{kind: StepNone, phase: v1alpha1.PhaseCanceled}},
		{"a Detached Delegation is left alone", observe(following(v1alpha1.PhaseDetached), withParent(parentIn(v1alpha1.PhaseCanceled))),
			expect{kind: StepNone, phase: v1alpha1.PhaseDetached}},
		{"a Failed group is left alone", observe(asGroup, inPhase(v1alpha1.PhaseFailed), withChildren(v1alpha1.ChildCounts{Active: 1})),
			expect{kind: StepNone, phase: v1alpha1.PhaseFailed}},

		// An invalid parentRef chain.
		{"an invalid tree fails the Delegation before it starts", observe(treeError("parentRef cycle: a -> b -> a")),
			expect{kind: StepSettle, phase: v1alpha1.PhaseFailed, reason: ReasonInvalidTree,
				class: v1alpha1.FailureInvalidRequest, message: "parentRef cycle: a -> b -> a"}},
		{"an invalid tree fails a group before it starts", observe(asGroup, treeError("too deep")),
			expect{kind: StepSettle, phase: v1alpha1.PhaseFailed, reason: ReasonInvalidTree, class: v1alpha1.FailureInvalidRequest}},
		{"an invalid tree is ignored once the send began", observe(sending(now), treeError("too deep")), start},
		{"an invalid tree is ignored once the task is followed", observe(running, treeError("too deep")),
			follow(v1alpha1.PhaseRunning)},

		// spec.cancel.
		{"spec.cancel cancels a running task", observe(running, cancelInSpec), cancelAs(ReasonRequested)},
		{"spec.cancel cancels a task waiting for input", observe(inputRequired, cancelInSpec), cancelAs(ReasonRequested)},
		{"spec.cancel cancels a task waiting for auth", observe(authRequired, cancelInSpec), cancelAs(ReasonRequested)},
		{"spec.cancel cancels a Delegation that never started", observe(inPhase(v1alpha1.PhasePending), cancelInSpec),
			cancelAs(ReasonRequested)},
		{"spec.cancel cancels an in-flight send", observe(sending(now), cancelInSpec), cancelAs(ReasonRequested)},
		{"spec.cancel cancels a group", observe(asGroup, inPhase(v1alpha1.PhaseRunning), cancelInSpec), cancelAs(ReasonRequested)},
		{"spec.cancel wins over a passed deadline", observe(running, passed, cancelInSpec), cancelAs(ReasonRequested)},

		// Parent deleted (cascade 1).
		{"a deleting parent cancels a running child", observe(running, withParent(parentDeleting)), cancelAs(ReasonParentDeleted)},
		{"a deleting parent cancels a child waiting for input", observe(inputRequired, withParent(parentDeleting)),
			cancelAs(ReasonParentDeleted)},
		{"a deleting parent cancels a child that never started", observe(withParent(parentDeleting)), cancelAs(ReasonParentDeleted)},
		{"a deleting parent cancels a child under the explicit Cancel policy", observe(running, cancelPolicy, withParent(parentDeleting)),
			cancelAs(ReasonParentDeleted)},
		{"a parent gone after start cancels the child", observe(running, withParent(parentMissing)), cancelAs(ReasonParentDeleted)},
		{"a parent gone after start cancels a child waiting for auth", observe(authRequired, withParent(parentMissing)),
			cancelAs(ReasonParentDeleted)},
		{"a parent gone during the send cancels the child", observe(sending(now), withParent(parentMissing)),
			cancelAs(ReasonParentDeleted)},

		// Parent cancelled (cascade 3): explicit, so it reaches interrupted children too.
		{"a Canceled parent cancels a running child", observe(running, withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},
		{"a Canceled parent cancels a child waiting for input", observe(inputRequired, withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},
		{"a Canceled parent cancels a child waiting for auth", observe(authRequired, withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},
		{"a Canceled parent cancels a child that never started", observe(withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},
		{"a Canceled parent cancels a running group", observe(asGroup, inPhase(v1alpha1.PhaseRunning), withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},

		// Parent returned early (cascade 2): interrupted children are handed back, not cancelled.
		{"a Succeeded parent cancels a running child", observe(running, withParent(parentIn(v1alpha1.PhaseSucceeded))),
			expect{kind: StepCancel, phase: v1alpha1.PhaseCanceled, reason: ReasonParentEnded, message: "the parent ended (Succeeded)"}},
		{"a Failed parent cancels a running child", observe(running, withParent(parentIn(v1alpha1.PhaseFailed))),
			expect{kind: StepCancel, phase: v1alpha1.PhaseCanceled, reason: ReasonParentEnded, message: "the parent ended (Failed)"}},
		{"a Succeeded parent cancels a child that never started", observe(withParent(parentIn(v1alpha1.PhaseSucceeded))),
			cancelAs(ReasonParentEnded)},
		{"a Failed parent cancels an in-flight send", observe(sending(now), withParent(parentIn(v1alpha1.PhaseFailed))),
			cancelAs(ReasonParentEnded)},
		{"a Succeeded parent leaves a child waiting for input", observe(inputRequired, withParent(parentIn(v1alpha1.PhaseSucceeded))),
			follow(v1alpha1.PhaseInputRequired)},
		{"a Failed parent leaves a child waiting for auth", observe(authRequired, withParent(parentIn(v1alpha1.PhaseFailed))),
			follow(v1alpha1.PhaseAuthRequired)},
		{"a Detached parent leaves a running child: its task keeps running", observe(running, withParent(parentIn(v1alpha1.PhaseDetached))),
			follow(v1alpha1.PhaseRunning)},

		// Parent deadline (cascade 4): a timer, so interrupted children are left alone.
		{"a parent past its deadline cancels a running child", observe(running, withParent(parentExpired)), cancelAs(ReasonParentExpired)},
		{"a parent at its deadline cancels a running child",
			observe(running, withParent(Parent{Found: true, Phase: v1alpha1.PhaseRunning, Deadline: now})), cancelAs(ReasonParentExpired)},
		{"a parent past its deadline cancels a child that never started", observe(withParent(parentExpired)), cancelAs(ReasonParentExpired)},
		{"a parent before its deadline leaves the child running",
			observe(running, withParent(Parent{Found: true, Phase: v1alpha1.PhaseRunning, Deadline: now.Add(time.Second)})),
			follow(v1alpha1.PhaseRunning)},
		{"a parent past its deadline leaves a child waiting for input", observe(inputRequired, withParent(parentExpired)),
			follow(v1alpha1.PhaseInputRequired)},
		{"a parent past its deadline leaves a child waiting for auth", observe(authRequired, withParent(parentExpired)),
			follow(v1alpha1.PhaseAuthRequired)},

		// Own deadline.
		{"the own deadline passed cancels the task and fails it as BudgetExhausted", observe(running, passed), deadlineFailure},
		{"the own deadline reached cancels the task",
			observe(running, ownDeadline(now)), expect{kind: StepCancel, phase: v1alpha1.PhaseFailed, reason: ReasonDeadline,
				class: v1alpha1.FailureBudgetExhausted}},
		{"the own deadline ahead leaves the task running", observe(running, ownDeadline(now.Add(time.Second))),
			follow(v1alpha1.PhaseRunning)},
		{"the own deadline passed during the send cancels it", observe(sending(now), passed), deadlineFailure},
		{"the own deadline passed fails a running group", observe(asGroup, inPhase(v1alpha1.PhaseRunning), passed), deadlineFailure},
		{"the own deadline leaves a task waiting for input", observe(inputRequired, passed), follow(v1alpha1.PhaseInputRequired)},
		{"the own deadline leaves a task waiting for auth", observe(authRequired, passed), follow(v1alpha1.PhaseAuthRequired)},
		{"a parent trigger wins over the own deadline", observe(running, passed, withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},

		// The Detach policy ignores every parent trigger.
		{"Detach policy: a deleting parent leaves the child running", observe(running, detachPolicy, withParent(parentDeleting)),
			follow(v1alpha1.PhaseRunning)},
		{"Detach policy: a parent gone after start leaves the child running", observe(running, detachPolicy, withParent(parentMissing)),
			follow(v1alpha1.PhaseRunning)},
		{"Detach policy: a Canceled parent leaves the child running",
			observe(running, detachPolicy, withParent(parentIn(v1alpha1.PhaseCanceled))), follow(v1alpha1.PhaseRunning)},
		{"Detach policy: a Canceled parent leaves a child waiting for input",
			observe(inputRequired, detachPolicy, withParent(parentIn(v1alpha1.PhaseCanceled))), follow(v1alpha1.PhaseInputRequired)},
		{"Detach policy: a Succeeded parent leaves the child running",
			observe(running, detachPolicy, withParent(parentIn(v1alpha1.PhaseSucceeded))), follow(v1alpha1.PhaseRunning)},
		{"Detach policy: a Failed parent leaves the child running",
			observe(running, detachPolicy, withParent(parentIn(v1alpha1.PhaseFailed))), follow(v1alpha1.PhaseRunning)},
		{"Detach policy: a parent past its deadline leaves the child running",
			observe(running, detachPolicy, withParent(parentExpired)), follow(v1alpha1.PhaseRunning)},
		{"Detach policy: the own deadline still applies", observe(running, detachPolicy, withParent(parentRunning), passed),
			deadlineFailure},
		{"Detach policy: spec.cancel still applies", observe(running, detachPolicy, withParent(parentDeleting), cancelInSpec),
			cancelAs(ReasonRequested)},

		// spec.detach.
		{"spec.detach stops following a running task", observe(running, detachInSpec),
			expect{kind: StepDetach, phase: v1alpha1.PhaseDetached, reason: ReasonDetached, message: "the remote task keeps running"}},
		{"spec.detach stops following a task waiting for input", observe(inputRequired, detachInSpec), detached},
		{"spec.detach stops following an in-flight send", observe(sending(now), detachInSpec), detached},
		{"spec.detach before start never sends", observe(inPhase(v1alpha1.PhasePending), detachInSpec), detached},
		{"spec.detach detaches a group", observe(asGroup, inPhase(v1alpha1.PhaseRunning), detachInSpec), detached},
		{"a parent trigger wins over spec.detach", observe(running, detachInSpec, withParent(parentIn(v1alpha1.PhaseCanceled))),
			cancelAs(ReasonParentEnded)},
		{"the own deadline wins over spec.detach", observe(running, detachInSpec, passed), deadlineFailure},

		// Waiting before start: a tree may be applied in any order.
		{"a child waits for a parent that does not exist yet", observe(withParent(parentMissing)),
			waitFor(ReasonParentNotFound, `parent "lead" not found`)},
		{"a child waits for a Pending parent", observe(withParent(parentIn(v1alpha1.PhasePending))),
			waitFor(ReasonWaitingParent, `parent "lead" is Pending`)},
		{"a child waits for a parent without status yet", observe(withParent(parentIn(""))),
			waitFor(ReasonWaitingParent, `parent "lead" is Pending`)},
		{"a Detach-policy child waits for a parent that does not exist yet", observe(detachPolicy, withParent(parentMissing)),
			waitFor(ReasonParentNotFound, "")},
		{"a Detach-policy child waits for a Pending parent", observe(detachPolicy, withParent(parentIn(v1alpha1.PhasePending))),
			waitFor(ReasonWaitingParent, "")},
		{"a group waits for its parent", observe(asGroup, withParent(parentIn(v1alpha1.PhasePending))), waitFor(ReasonWaitingParent, "")},
		{"the parent is waited for before the Agent", observe(agent(false, false), withParent(parentMissing)),
			waitFor(ReasonParentNotFound, "")},
		{"a Delegation waits for a missing Agent", observe(agent(false, false)), waitFor(ReasonAgentNotFound, `Agent "echo" not found`)},
		{"a Delegation waits for an Agent that is not Ready", observe(agent(true, false)),
			waitFor(ReasonAgentNotReady, `Agent "echo" is not Ready`)},
		{"a Delegation waits for a grant to another namespace's Agent", observe(sharedNotGranted),
			waitFor(ReasonAgentNotGranted, `no AgentGrant in namespace "platform" admits this namespace to Agent "echo"`)},
		{"the parent is waited for before the grant", observe(sharedNotGranted, withParent(parentMissing)),
			waitFor(ReasonParentNotFound, "")},
		{"a revoked grant leaves a started task followed", observe(running, sharedNotGranted), follow(v1alpha1.PhaseRunning)},
		{"a child of a Running parent waits for its Agent", observe(withParent(parentRunning), agent(true, false)),
			waitFor(ReasonAgentNotReady, "")},

		// Start.
		{"a Delegation without status starts", observe(), start},
		{"a Pending Delegation starts", observe(inPhase(v1alpha1.PhasePending)), start},
		{"a Delegation adopting spec.taskID starts", observe(adopting), start},
		{"a child of a Running parent starts", observe(withParent(parentRunning)), start},
		{"a child of a parent waiting for input starts", observe(withParent(parentIn(v1alpha1.PhaseInputRequired))), start},
		{"a child of a parent waiting for auth starts", observe(withParent(parentIn(v1alpha1.PhaseAuthRequired))), start},
		{"a child of a Detached parent starts", observe(withParent(parentIn(v1alpha1.PhaseDetached))), start},
		{"a child of a parent before its deadline starts",
			observe(withParent(Parent{Found: true, Phase: v1alpha1.PhaseRunning, Deadline: now.Add(time.Minute)})), start},
		{"a Detach-policy child of a Succeeded parent starts", observe(detachPolicy, withParent(parentIn(v1alpha1.PhaseSucceeded))), start},
		{"a Detach-policy child of a Failed parent starts", observe(detachPolicy, withParent(parentIn(v1alpha1.PhaseFailed))), start},
		{"a Detach-policy child of a Canceled parent starts", observe(detachPolicy, withParent(parentIn(v1alpha1.PhaseCanceled))), start},
		{"a Detach-policy child of a deleting parent starts", observe(detachPolicy, withParent(parentDeleting)), start},

		// Groups settle on their children and never need an Agent.
		{"a group without parent follows its children", observe(asGroup), groupRunning},
		{"a group of a Running parent follows its children", observe(asGroup, withParent(parentRunning)), groupRunning},
		{"a running group follows its children", observe(asGroup, inPhase(v1alpha1.PhaseRunning), withChildren(v1alpha1.ChildCounts{Active: 2})),
			groupRunning},
		{"a running group settles when its children did", observe(asGroup, inPhase(v1alpha1.PhaseRunning), withChildren(v1alpha1.ChildCounts{Succeeded: 2})),
			expect{kind: StepGroup, phase: v1alpha1.PhaseSucceeded, reason: ReasonCompleted}},

		// A send in flight is looked up, within a bound.
		{"a send in flight is looked up", observe(sending(now.Add(-time.Minute))), start},
		{"a send in flight a day ago is still looked up: only evidence or the deadline ends it", observe(sending(now.Add(-24 * time.Hour))), start},
		{"a send that never left a day ago is made again", observe(sending(now.Add(-24*time.Hour)),
			func(o *Observation) { o.Status.SendResult = v1alpha1.SendNotSent }), start},
		{"a send in flight still Pending is looked up, not sent again", observe(sending(now), inPhase(v1alpha1.PhasePending)), start},

		// A task id means the task is followed in the phase it is in.
		{"a running task is followed", observe(running), follow(v1alpha1.PhaseRunning)},
		{"a task waiting for input is followed", observe(inputRequired), follow(v1alpha1.PhaseInputRequired)},
		{"a task waiting for auth is followed", observe(authRequired), follow(v1alpha1.PhaseAuthRequired)},
		{"a task with an id and a stale send mark is followed", observe(sending(now.Add(-time.Hour)), running), follow(v1alpha1.PhaseRunning)},
		{"a followed task no longer needs its Agent Ready", observe(running, agent(false, false)), follow(v1alpha1.PhaseRunning)},
		{"a followed child of a Running parent is followed", observe(running, withParent(parentRunning)), follow(v1alpha1.PhaseRunning)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.check(NewWithT(t), Gate(tt.obs))
		})
	}
}

func TestGroup(t *testing.T) {
	tests := []struct {
		name     string
		children v1alpha1.ChildCounts
		want     expect
	}{
		{"a group without children yet keeps running", v1alpha1.ChildCounts{},
			expect{kind: StepGroup, phase: v1alpha1.PhaseRunning, reason: ReasonWaitingChildren, message: "0 of 0 children active"}},
		{"a group with active children keeps running", v1alpha1.ChildCounts{Active: 2, Succeeded: 1},
			expect{kind: StepGroup, phase: v1alpha1.PhaseRunning, reason: ReasonWaitingChildren, message: "2 of 3 children active"}},
		{"a group waits for active children even after a failure", v1alpha1.ChildCounts{Active: 1, Failed: 1},
			expect{kind: StepGroup, phase: v1alpha1.PhaseRunning, reason: ReasonWaitingChildren}},
		{"a failed child fails the group", v1alpha1.ChildCounts{Succeeded: 2, Failed: 1},
			expect{kind: StepGroup, phase: v1alpha1.PhaseFailed, reason: ReasonChildFailed, class: v1alpha1.FailureInternal,
				message: "1 of 3 children failed"}},
		{"a failure outweighs a cancellation", v1alpha1.ChildCounts{Failed: 1, Canceled: 1},
			expect{kind: StepGroup, phase: v1alpha1.PhaseFailed, reason: ReasonChildFailed, class: v1alpha1.FailureInternal}},
		{"a cancelled child cancels the group", v1alpha1.ChildCounts{Succeeded: 1, Canceled: 1},
			expect{kind: StepGroup, phase: v1alpha1.PhaseCanceled, reason: ReasonChildCanceled, message: "1 of 2 children were cancelled"}},
		{"all children succeeded: the group succeeds", v1alpha1.ChildCounts{Succeeded: 3},
			expect{kind: StepGroup, phase: v1alpha1.PhaseSucceeded, reason: ReasonCompleted, message: "all 3 children succeeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.check(NewWithT(t), Group(observe(asGroup, withChildren(tt.children))))
		})
	}
}

func TestAfterRead(t *testing.T) {
	replies := func(given []string, sent int32) change {
		return func(o *Observation) {
			o.Spec.Replies = nil
			for _, text := range given {
				o.Spec.Replies = append(o.Spec.Replies, v1alpha1.Reply{Text: text})
			}
			o.Status.RepliesSent = sent
		}
	}
	reply := expect{next: ReadReply, phase: v1alpha1.PhaseRunning, reason: ReasonWorking, message: "sending a reply"}
	working := expect{next: ReadGoOn, phase: v1alpha1.PhaseRunning, reason: ReasonWorking, message: "thinking"}
	remoteFailed := func(c v1alpha1.FailureClass) expect {
		return expect{next: ReadSettle, phase: v1alpha1.PhaseFailed, reason: ReasonRemoteFailed, class: c}
	}

	tests := []struct {
		name string
		obs  Observation
		task a2a.Task
		want expect
	}{
		{"Completed succeeds", observe(following(v1alpha1.PhaseRunning)), a2a.Task{State: a2a.StateCompleted, StatusText: "done"},
			expect{next: ReadSettle, phase: v1alpha1.PhaseSucceeded, reason: ReasonCompleted, message: "done"}},
		{"Failed with a known class keeps the class: InvalidRequest", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "InvalidRequest"}, remoteFailed(v1alpha1.FailureInvalidRequest)},
		{"Failed with a known class keeps the class: Transient", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "Transient"}, remoteFailed(v1alpha1.FailureTransient)},
		{"Failed with a known class keeps the class: PolicyRefusal", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "PolicyRefusal"}, remoteFailed(v1alpha1.FailurePolicyRefusal)},
		{"Failed with a known class keeps the class: BudgetExhausted", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "BudgetExhausted"}, remoteFailed(v1alpha1.FailureBudgetExhausted)},
		{"Failed with a known class keeps the class: Internal", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "Internal"}, remoteFailed(v1alpha1.FailureInternal)},
		{"Failed with a known class keeps the class: Unreachable", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "Unreachable"}, remoteFailed(v1alpha1.FailureUnreachable)},
		{"Failed with a known class keeps the class: Rejected", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "Rejected"}, remoteFailed(v1alpha1.FailureRejected)},
		{"Failed without a class reads as Internal", observe(),
			a2a.Task{State: a2a.StateFailed, StatusText: "ran out of tokens"},
			expect{next: ReadSettle, phase: v1alpha1.PhaseFailed, reason: ReasonRemoteFailed, class: v1alpha1.FailureInternal,
				message: "ran out of tokens"}},
		{"Failed with an unknown class reads as Internal", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "OutOfCoffee"}, remoteFailed(v1alpha1.FailureInternal)},
		{"Failed with a class in the wrong case reads as Internal", observe(),
			a2a.Task{State: a2a.StateFailed, FailureClass: "transient"}, remoteFailed(v1alpha1.FailureInternal)},
		{"Rejected fails as Rejected", observe(), a2a.Task{State: a2a.StateRejected, StatusText: "not my job"},
			expect{next: ReadSettle, phase: v1alpha1.PhaseFailed, reason: ReasonRemoteRejected, class: v1alpha1.FailureRejected,
				message: "not my job"}},
		{"Canceled at the agent cancels", observe(), a2a.Task{State: a2a.StateCanceled, StatusText: "lease expired"},
			expect{next: ReadSettle, phase: v1alpha1.PhaseCanceled, reason: ReasonRemote, message: "lease expired"}},

		{"InputRequired without replies hands the task back", observe(), a2a.Task{State: a2a.StateInputRequired, StatusText: "which year?"},
			expect{next: ReadGoOn, phase: v1alpha1.PhaseInputRequired, reason: ReasonInputRequired, message: "which year?"}},
		{"InputRequired with every reply sent hands the task back", observe(replies([]string{"2025"}, 1)),
			a2a.Task{State: a2a.StateInputRequired}, expect{next: ReadGoOn, phase: v1alpha1.PhaseInputRequired, reason: ReasonInputRequired}},
		{"InputRequired with a reply pending sends it", observe(replies([]string{"2025"}, 0)),
			a2a.Task{State: a2a.StateInputRequired}, reply},
		{"InputRequired with the next reply appended sends it", observe(inPhase(v1alpha1.PhaseInputRequired), replies([]string{"2025", "Q3"}, 1)),
			a2a.Task{State: a2a.StateInputRequired}, reply},
		{"AuthRequired without replies hands the task back", observe(), a2a.Task{State: a2a.StateAuthRequired, StatusText: "sign in"},
			expect{next: ReadGoOn, phase: v1alpha1.PhaseAuthRequired, reason: ReasonAuthRequired, message: "sign in"}},
		{"AuthRequired with every reply sent hands the task back", observe(replies([]string{"token"}, 1)),
			a2a.Task{State: a2a.StateAuthRequired}, expect{next: ReadGoOn, phase: v1alpha1.PhaseAuthRequired, reason: ReasonAuthRequired}},
		{"AuthRequired never sends replies: an auth challenge is met out of band", observe(replies([]string{"token"}, 0)),
			a2a.Task{State: a2a.StateAuthRequired}, expect{next: ReadGoOn, phase: v1alpha1.PhaseAuthRequired, reason: ReasonAuthRequired}},

		{"Working runs", observe(), a2a.Task{State: a2a.StateWorking, StatusText: "thinking"}, working},
		{"Submitted runs", observe(), a2a.Task{State: a2a.StateSubmitted, StatusText: "thinking"}, working},
		{"Unknown runs", observe(), a2a.Task{State: a2a.StateUnknown, StatusText: "thinking"}, working},
		{"Working after input was given runs again", observe(following(v1alpha1.PhaseInputRequired)),
			a2a.Task{State: a2a.StateWorking, StatusText: "thinking"}, working},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.checkRead(NewWithT(t), AfterRead(tt.obs, &tt.task))
		})
	}
}

func TestLostFailsAsInternal(t *testing.T) {
	expect{phase: v1alpha1.PhaseFailed, reason: ReasonTaskLost, class: v1alpha1.FailureInternal,
		message: "no longer knows the task"}.checkRecord(NewWithT(t), Lost())
}

func TestSendRefused(t *testing.T) {
	g := NewWithT(t)
	expect{phase: v1alpha1.PhaseFailed, reason: ReasonSendRefused, class: v1alpha1.FailurePolicyRefusal,
		message: "over quota"}.checkRecord(g, SendRefused("PolicyRefusal", "over quota"))
	expect{phase: v1alpha1.PhaseFailed, reason: ReasonSendRefused, class: v1alpha1.FailureInternal}.
		checkRecord(g, SendRefused("", "refused"))
	expect{phase: v1alpha1.PhaseFailed, reason: ReasonSendRefused, class: v1alpha1.FailureInternal}.
		checkRecord(g, SendRefused("Nope", "refused"))
}

func TestPhaseClasses(t *testing.T) {
	tests := []struct {
		phase                v1alpha1.Phase
		settled, interrupted bool
	}{
		{"", false, false},
		{v1alpha1.PhasePending, false, false},
		{v1alpha1.PhaseRunning, false, false},
		{v1alpha1.PhaseInputRequired, false, true},
		{v1alpha1.PhaseAuthRequired, false, true},
		{v1alpha1.PhaseSucceeded, true, false},
		{v1alpha1.PhaseFailed, true, false},
		{v1alpha1.PhaseCanceled, true, false},
		{v1alpha1.PhaseDetached, true, false},
	}
	for _, tt := range tests {
		name := string(tt.phase)
		if name == "" {
			name = "no phase yet"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Settled(tt.phase)).To(Equal(tt.settled), "settled")
			g.Expect(Interrupted(tt.phase)).To(Equal(tt.interrupted), "interrupted")
		})
	}
}

func TestStartedOnceASendBeginsOrATaskIDIsKnown(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Started(observe().Status)).To(BeFalse(), "fresh")
	g.Expect(Started(observe(adopting).Status)).To(BeFalse(), "spec.taskID alone is not a start")
	g.Expect(Started(observe(sending(now)).Status)).To(BeTrue(), "send in flight")
	g.Expect(Started(observe(following(v1alpha1.PhaseRunning)).Status)).To(BeTrue(), "task id")
}

func TestIsGroupWithoutAgentRef(t *testing.T) {
	g := NewWithT(t)
	g.Expect(IsGroup(observe().Spec)).To(BeFalse())
	g.Expect(IsGroup(observe(asGroup).Spec)).To(BeTrue())
}
