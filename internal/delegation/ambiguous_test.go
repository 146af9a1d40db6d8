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

func TestPendingSendIsLookedUpOrGivenUpNeverGuessed(t *testing.T) {
	tests := []struct {
		name    string
		last    v1alpha1.SendResult
		canList bool
		want    SendPlan
	}{
		{"a request that never left is sent again (listing agent)", v1alpha1.SendNotSent, true, PlanSend},
		{"a request that never left is sent again (agent that cannot list)", v1alpha1.SendNotSent, false, PlanSend},
		{"a crash mid-send is looked up at a listing agent", v1alpha1.SendInFlight, true, PlanLookUp},
		{"a marker from before sendResult existed is looked up", "", true, PlanLookUp},
		{"a lost answer is looked up at a listing agent", v1alpha1.SendUnknown, true, PlanLookUp},
		{"a crash mid-send at an agent that cannot list gives up", v1alpha1.SendInFlight, false, PlanGiveUp},
		{"a lost answer at an agent that cannot list gives up", v1alpha1.SendUnknown, false, PlanGiveUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(PendingSend(tt.last, tt.canList).Plan).To(Equal(tt.want))
		})
	}
}

// A lost send is sent again only once an answered look-up, made after the
// send's own deadline, proved the agent has no task of it; it is never given
// up on the clock: look-ups that fail are made again until the deadline.
func TestAfterALookUpOnlyWhatItProvedDecides(t *testing.T) {
	tests := []struct {
		name string
		r    LookUpResult
		want SendPlan
	}{
		{"answered, empty, after the send's deadline: send the same message again",
			LookUpResult{NoTask: true, AfterSendDeadline: true}, PlanSend},
		{"answered, empty, while the send may still be on its way: look again",
			LookUpResult{NoTask: true}, PlanWait},
		{"no answer: look again", LookUpResult{FailedLookUps: 1}, PlanWait},
		{"no answer, however many times: look again", LookUpResult{FailedLookUps: 500}, PlanWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(AfterLookUp(tt.r).Plan).To(Equal(tt.want))
		})
	}
}

func TestAfterSendNeverRefundsAnAmbiguousAnswer(t *testing.T) {
	tests := []struct {
		name       string
		res        a2a.Class
		canList    bool
		wantResult v1alpha1.SendResult
		wantPlan   SendPlan
	}{
		{"dial error at a listing agent", a2a.ClassNotMade, true, v1alpha1.SendNotSent, PlanSend},
		{"dial error at an agent that cannot list", a2a.ClassNotMade, false, v1alpha1.SendNotSent, PlanSend},
		{"gateway error at a listing agent", a2a.ClassUnknown, true, v1alpha1.SendUnknown, PlanLookUp},
		{"gateway error at an agent that cannot list", a2a.ClassUnknown, false, v1alpha1.SendUnknown, PlanGiveUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			result, step := AfterSend(tt.res, tt.canList, "boom", "until")
			g.Expect(result).To(Equal(tt.wantResult))
			g.Expect(step.Plan).To(Equal(tt.wantPlan))
		})
	}
}

// The decisions about a send without a task id carry what status shows:
// the settled record when they give up, the note beside an unchanged phase
// while they wait; the controller only carries them out.
func TestSendStepsSayWhatStatusShows(t *testing.T) {
	tests := []struct {
		name         string
		step         SendStep
		plan         SendPlan
		phase        v1alpha1.Phase
		reason, text string
		noteText     string
	}{
		{"a marker at an agent that cannot list", PendingSend(v1alpha1.SendInFlight, false), PlanGiveUp,
			v1alpha1.PhaseFailed, ReasonSendOutcomeUnknown, "the send may have reached the agent, which cannot list tasks", ""},
		{"a lost answer at an agent that cannot list", func() SendStep { _, s := AfterSend(a2a.ClassUnknown, false, "502", "until x"); return s }(), PlanGiveUp,
			v1alpha1.PhaseFailed, ReasonSendOutcomeUnknown, "the agent cannot list tasks: it is not sent again; a lease, if any, bounds a task started by it: 502", ""},
		{"a lost answer at a listing agent", func() SendStep { _, s := AfterSend(a2a.ClassUnknown, true, "502", "until x"); return s }(), PlanLookUp,
			"", "", "", "the send did not complete: 502; until x"},
		{"look-ups that keep failing", AfterLookUp(LookUpResult{FailedLookUps: 7, Err: "reset", Until: "until x"}), PlanWait,
			"", "", "", "looking up the task of an earlier send (7 look-ups in a row failed, the last: reset); until x"},
		{"an empty look-up while the send may be on its way", AfterLookUp(LookUpResult{NoTask: true, Until: "until x"}), PlanWait,
			"", "", "", "the answer to the send was lost; looking for the task at the agent: no task is taken as absent before the send's deadline passed; until x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.step.Plan).To(Equal(tt.plan))
			g.Expect(tt.step.Record.Phase).To(Equal(tt.phase))
			g.Expect(tt.step.Record.Outcome.Reason).To(Equal(tt.reason))
			g.Expect(tt.step.Record.Outcome.Message).To(ContainSubstring(tt.text))
			g.Expect(tt.step.Note).To(Equal(tt.noteText))
			if tt.phase != "" {
				g.Expect(tt.step.Record.Outcome.FailureClass).To(Equal(v1alpha1.FailureUnreachable))
			}
		})
	}
}

func TestGivingUpOnASendKeepsTheReservation(t *testing.T) {
	g := NewWithT(t)
	step := SendOutcomeUnknown("lost")
	g.Expect(step.Phase).To(Equal(v1alpha1.PhaseFailed))
	g.Expect(step.Outcome.Reason).To(Equal(ReasonSendOutcomeUnknown))
	st := &v1alpha1.DelegationStatus{Outcome: &step.Outcome}
	reservation := v1alpha1.Meters{"tokens": 10}
	g.Expect(Charge(&v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}}, st, reservation)).To(Equal(reservation))
}

// The clock alone never settles a send without a task id: the Gate starts
// it again (look it up, send it again, or give up on the evidence of an
// agent that cannot list), however long ago it was first made.
func TestGateLeavesASendWithoutATaskIDToTheEvidence(t *testing.T) {
	started := metav1.NewTime(time.Unix(1000, 0))
	obs := func(last v1alpha1.SendResult, canList bool) Observation {
		return Observation{
			Now:  started.Add(24 * time.Hour),
			Spec: &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}, Message: &v1alpha1.Message{Text: "x"}},
			Status: &v1alpha1.DelegationStatus{Phase: v1alpha1.PhasePending, SendStarted: &started, SendResult: last,
				StartTime: &started},
			Agent: Agent{Found: true, Ready: true, CanList: canList},
		}
	}
	g := NewWithT(t)
	for _, last := range []v1alpha1.SendResult{v1alpha1.SendNotSent, v1alpha1.SendUnknown, v1alpha1.SendInFlight} {
		for _, canList := range []bool{true, false} {
			g.Expect(Gate(obs(last, canList)).Kind).To(Equal(StepStart), "%s, canList %v", last, canList)
		}
	}
	withDeadline := obs(v1alpha1.SendUnknown, true)
	deadline := metav1.NewTime(started.Add(time.Hour))
	withDeadline.Status.Deadline = &deadline
	g.Expect(Gate(withDeadline).Outcome.Reason).To(Equal(ReasonDeadline), "the Delegation's own deadline ends it")
}

func TestKeepsTryingSaysUntilWhen(t *testing.T) {
	g := NewWithT(t)
	spec := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "worker"}}
	g.Expect(KeepsTrying(spec, &v1alpha1.DelegationStatus{})).To(Equal(`no deadline: tried for as long as Agent "worker" exists`))
	deadline := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	g.Expect(KeepsTrying(spec, &v1alpha1.DelegationStatus{Deadline: &deadline})).To(Equal("tried until the deadline 2026-12-03T10:00:00Z"))
}

func TestCheckReplyNeitherLosesNorRepeatsAReply(t *testing.T) {
	const id = "reply-0"
	tests := []struct {
		name string
		task *a2a.Task
		want ReplyCheck
	}{
		{"the reply is in the history", &a2a.Task{State: a2a.StateInputRequired, MessageIDs: []string{"first", id}}, ReplyArrived},
		{"the reply is in the history of a finished task", &a2a.Task{State: a2a.StateCompleted, MessageIDs: []string{"first", id}}, ReplyArrived},
		{"the task moved on without history", &a2a.Task{State: a2a.StateWorking}, ReplyArrived},
		{"the task still waits and its history lacks the reply", &a2a.Task{State: a2a.StateInputRequired, MessageIDs: []string{"first"}}, ReplyMissing},
		{"the task waits and the agent returns no history", &a2a.Task{State: a2a.StateInputRequired}, ReplyUnconfirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(CheckReply(tt.task, id)).To(Equal(tt.want))
		})
	}
}

func TestReplyClaimIsGivenBackOnlyWhenNothingArrived(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ReplyAfterSend(a2a.ClassRefused)).To(BeTrue())
	g.Expect(ReplyAfterSend(a2a.ClassNotMade)).To(BeTrue())
	g.Expect(ReplyAfterSend(a2a.ClassUnknown)).To(BeFalse(), "a lost answer keeps the claim")
}

func TestChildOfADeletingParentThatNeverStartedWaits(t *testing.T) {
	spec := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}, ParentRef: &v1alpha1.LocalRef{Name: "p"},
		Message: &v1alpha1.Message{Text: "x"}}
	now := time.Unix(1000, 0)
	started := metav1.NewTime(now)
	tests := []struct {
		name   string
		parent Parent
		status v1alpha1.DelegationStatus
		want   StepKind
		reason string
	}{
		{"not owned, never started: waits for the new parent", Parent{Found: true, Deleting: true}, v1alpha1.DelegationStatus{},
			StepWait, ReasonWaitingParent},
		{"owned, never started: goes with its parent", Parent{Found: true, Deleting: true, Owns: true}, v1alpha1.DelegationStatus{},
			StepCancel, ReasonParentDeleted},
		{"started: cancelled", Parent{Found: true, Deleting: true, Owns: true},
			v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, TaskID: "t", StartTime: &started}, StepCancel, ReasonParentDeleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := tt.status
			p := tt.parent
			step := Gate(Observation{Now: now, Spec: spec, Status: &st, Parent: &p, Agent: Agent{Found: true, Ready: true}})
			g.Expect(step.Kind).To(Equal(tt.want))
			g.Expect(step.Outcome.Reason).To(Equal(tt.reason))
		})
	}
}
