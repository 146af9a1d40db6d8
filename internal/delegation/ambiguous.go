/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"slices"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// An answer from an agent can be lost: a proxy answers 502 after it forwarded
// the send, a connection drops, the operator stops between a call and its
// status write. What the operator does next is decided here, never guessed:
// only an answer that proves nothing started is a refusal; everything else
// is resolved by looking the task up.

// What a call came to is a2a.Outcome, decided once by a2a.Classify and
// carried by every answer of the agent I/O layer: Accepted, Refused (nothing
// started), NotMade (nothing left the operator, so it may be made again) or
// Unknown (it may have reached the agent; never taken as a refusal).

// ReasonSendOutcomeUnknown: a send may have reached an agent that cannot list
// tasks, so its task can be neither found nor safely sent again.
const ReasonSendOutcomeUnknown = "SendOutcomeUnknown"

// SendPlan is what to do about a send that has no task id yet.
type SendPlan string

const (
	// PlanSend: send (again), with the same message id.
	PlanSend SendPlan = "Send"
	// PlanLookUp: list the context's tasks and adopt this Delegation's own.
	PlanLookUp SendPlan = "LookUp"
	// PlanWait: the look-up found nothing yet; look again later (until
	// --send-timeout), never send again.
	PlanWait SendPlan = "Wait"
	// PlanGiveUp: settle Failed, reason SendOutcomeUnknown; the reservation
	// is kept and the lease bounds a task that may be running.
	PlanGiveUp SendPlan = "GiveUp"
)

// SendStep is what to do about a send that has no task id yet, with what
// status shows meanwhile: Record when the Delegation settles (PlanGiveUp),
// Note as the outcome's message beside an unchanged phase otherwise.
type SendStep struct {
	Plan   SendPlan
	Record Record
	Note   string
}

// PendingSend decides what to do with a send marker (status.sendStarted set,
// no task id) before calling the agent. canList says whether the agent can
// list tasks for this caller.
//   - A request that never left the operator is sent again.
//   - An agent that can list is asked first: the task may be there.
//   - An agent that cannot list may hold a task we cannot find; sending again
//     could start a second one: give up, and let the lease bound it.
func PendingSend(last v1alpha1.SendResult, canList bool) SendStep {
	switch {
	case last == v1alpha1.SendNotSent:
		return SendStep{Plan: PlanSend}
	case canList:
		return SendStep{Plan: PlanLookUp}
	}
	return SendStep{Plan: PlanGiveUp, Record: SendOutcomeUnknown("the send may have reached the agent, which cannot list tasks: " +
		"it is not sent again; a lease, if any, bounds a task started by it")}
}

// LookUpResult is what a look-up of a send without a task id proved, at an
// agent that lists tasks for the operator.
type LookUpResult struct {
	// NoTask: the agent answered and none of the listed tasks is the send's.
	// False: the look-up got no usable answer.
	NoTask bool
	// AfterSendDeadline: the look-up was made after the latest send's own
	// deadline, so no process held a request of that send any more.
	AfterSendDeadline bool
	// FailedLookUps counts look-ups in a row without a usable answer, and
	// Err is the last one's error: both are told in the note.
	FailedLookUps int
	Err           string
	// Until says how long the operator keeps at it (KeepsTrying).
	Until string
}

// AfterLookUp decides after a look-up that found no task of this Delegation,
// by what the look-ups proved and never by the clock alone; the
// Delegation's own deadline (or an ancestor's) ends the attempts:
//   - An answered look-up made after the send's deadline proves the agent
//     never started the task: the same message id is sent again.
//   - An answered look-up while a request of the send may still be on its
//     way proves nothing yet: look again.
//   - A look-up without an answer is made again, with a capped back-off.
//
// See docs/concepts.md for why sending the same message again is safe.
func AfterLookUp(r LookUpResult) SendStep {
	switch {
	case !r.NoTask:
		return SendStep{Plan: PlanWait, Note: fmt.Sprintf("looking up the task of an earlier send (%d look-ups in a row failed, the last: %s); %s",
			r.FailedLookUps, r.Err, r.Until)}
	case !r.AfterSendDeadline:
		return SendStep{Plan: PlanWait, Note: "the answer to the send was lost; looking for the task at the agent: no task is taken as absent " +
			"before the send's deadline passed; " + r.Until}
	}
	return SendStep{Plan: PlanSend}
}

// KeepsTrying says how long a send without a task id is looked up and made
// again: until the Delegation's deadline (its budget.timeout, or the
// parent's), or, without one, for as long as its Agent exists.
func KeepsTrying(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus) string {
	if st.Deadline != nil {
		return "tried until the deadline " + st.Deadline.UTC().Format("2006-01-02T15:04:05Z")
	}
	agent := ""
	if spec.AgentRef != nil {
		agent = spec.AgentRef.Name
	}
	return fmt.Sprintf("no deadline: tried for as long as Agent %q exists", agent)
}

// AfterSend is what a send that got no task leaves in status.sendResult, and
// what follows: the next pass looks the task up or sends again (the step's
// Note says why the send is still pending), or the Delegation settles.
// Accepted and Refused are handled by the caller (adopt the task;
// SendRefused with a refund). errText is the send's error.
func AfterSend(res a2a.Class, canList bool, errText, until string) (v1alpha1.SendResult, SendStep) {
	note := "the send did not complete: " + errText + "; " + until
	switch {
	case res == a2a.ClassNotMade:
		return v1alpha1.SendNotSent, SendStep{Plan: PlanSend, Note: note}
	case canList:
		return v1alpha1.SendUnknown, SendStep{Plan: PlanLookUp, Note: note}
	}
	giveUp := SendOutcomeUnknown("the answer to the send was lost and the agent cannot list tasks: " +
		"it is not sent again; a lease, if any, bounds a task started by it: " + errText)
	return v1alpha1.SendUnknown, SendStep{Plan: PlanGiveUp, Record: giveUp}
}

// SendOutcomeUnknown is the record of a send whose task can be neither
// found nor safely sent again. The reservation is kept as spent.
func SendOutcomeUnknown(msg string) Record {
	return sendOutcomeUnknown(msg).Record()
}

func sendOutcomeUnknown(msg string) Step {
	return failed(StepSettle, v1alpha1.FailureUnreachable, ReasonSendOutcomeUnknown, msg)
}

// SendNeverArrived is the record of a send the agent proved it never got
// (it listed no task of it after the send's own deadline) once the send's
// window is over. The reservation is kept: a request a proxy still holds
// may arrive late.
func SendNeverArrived(msg string) Record {
	return failed(StepSettle, v1alpha1.FailureUnreachable, ReasonUnreachable, msg).Record()
}

// ReplyCheck is what the task says about a reply whose delivery was not
// confirmed.
type ReplyCheck string

const (
	// ReplyArrived: the agent has it (in the history, or the task moved on).
	ReplyArrived ReplyCheck = "Arrived"
	// ReplyMissing: the task still waits for input and its history does not
	// hold the reply: send the same message id again.
	ReplyMissing ReplyCheck = "Missing"
	// ReplyUnconfirmed: the task waits for input but the agent returns no
	// history. Sending again could answer a later question with this reply,
	// so it is counted as sent (at most once) and the task is handed back.
	ReplyUnconfirmed ReplyCheck = "Unconfirmed"
)

// CheckReply decides whether a claimed reply reached the agent, from the
// task read back after the claim.
func CheckReply(t *a2a.Task, messageID string) ReplyCheck {
	switch {
	case slices.Contains(t.MessageIDs, messageID):
		return ReplyArrived
	case t.State != a2a.StateInputRequired:
		return ReplyArrived
	case len(t.MessageIDs) > 0:
		return ReplyMissing
	}
	return ReplyUnconfirmed
}

// ReplyAfterSend says whether a reply's claim is given back after the send:
// only when nothing reached the agent (a refusal, or a request that never
// left). A lost answer keeps the claim; the task is read before any re-send.
func ReplyAfterSend(res a2a.Class) (giveBack bool) {
	return res == a2a.ClassRefused || res == a2a.ClassNotMade
}

// LookUpSettles says whether a cancel or delete may settle a send that has
// no task id without cancelling anything: only when nothing can be running
// (the request never left), or the agent cannot list (then the lease bounds
// the task). Otherwise the task is looked up first and its look-up retried
// until --cancel-timeout.
func LookUpSettles(last v1alpha1.SendResult, canList bool) bool {
	return last == v1alpha1.SendNotSent || !canList
}
