/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"slices"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// An answer from an agent can be lost: a proxy answers 502 after it forwarded
// the send, a connection drops, the operator stops between a call and its
// status write. What the operator does next is decided here, never guessed:
// only an answer that proves nothing started is a refusal; everything else
// is resolved by looking the task up.

// CallResult is what one call to an agent came to.
type CallResult string

const (
	// CallAccepted: the agent answered and has the request.
	CallAccepted CallResult = "Accepted"
	// CallRefused: the agent answered no; provably nothing started.
	CallRefused CallResult = "Refused"
	// CallNotSent: the request never left the operator (a dial error, the
	// egress policy): nothing reached the agent, so it may be made again.
	CallNotSent CallResult = "NotSent"
	// CallUnknown: the request may have reached the agent and its answer was
	// lost (a gateway's 502/504, a 429 or 408, a dropped connection, a
	// timeout). Never taken as a refusal.
	CallUnknown CallResult = "Unknown"
)

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

// PendingSend decides what to do with a send marker (status.sendStarted set,
// no task id) before calling the agent. canList says whether the agent can
// list tasks for this caller.
//   - A request that never left the operator is sent again.
//   - An agent that can list is asked first: the task may be there.
//   - An agent that cannot list may hold a task we cannot find; sending again
//     could start a second one: give up, and let the lease bound it.
func PendingSend(last v1alpha1.SendResult, canList bool) SendPlan {
	switch {
	case last == v1alpha1.SendNotSent:
		return PlanSend
	case canList:
		return PlanLookUp
	}
	return PlanGiveUp
}

// AfterLookUp decides after a look-up that found no task of this Delegation.
// When the operator stopped mid-send (InFlight) and the agent has nothing,
// the send did not arrive: send the same message again. When the answer of a
// send that was made was lost (Unknown), the task may appear late: keep
// looking, never send again.
func AfterLookUp(last v1alpha1.SendResult) SendPlan {
	if last == v1alpha1.SendUnknown {
		return PlanWait
	}
	return PlanSend
}

// AfterSend is what a send that got no task leaves in status.sendResult, and
// whether the Delegation settles now. Accepted and Refused are handled by
// the caller (adopt the task; SendRefused with a refund).
func AfterSend(res CallResult, canList bool) (v1alpha1.SendResult, SendPlan) {
	switch {
	case res == CallNotSent:
		return v1alpha1.SendNotSent, PlanSend
	case canList:
		return v1alpha1.SendUnknown, PlanLookUp
	}
	return v1alpha1.SendUnknown, PlanGiveUp
}

// SendOutcomeUnknown is the step for a send whose task can be neither found
// nor safely sent again. The reservation is kept as spent.
func SendOutcomeUnknown(msg string) Step {
	return failed(StepSettle, v1alpha1.FailureUnreachable, ReasonSendOutcomeUnknown, msg)
}

// sendTimedOut is the step when --send-timeout passed without a task id: a
// send that never left is Unreachable; one that may have arrived is
// SendOutcomeUnknown. Both keep the reservation.
func sendTimedOut(st *v1alpha1.DelegationStatus, msg string) Step {
	if st.SendResult == v1alpha1.SendNotSent {
		return failed(StepSettle, v1alpha1.FailureUnreachable, ReasonUnreachable, msg)
	}
	return SendOutcomeUnknown(msg)
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
func ReplyAfterSend(res CallResult) (giveBack bool) {
	return res == CallRefused || res == CallNotSent
}

// LookUpSettles says whether a cancel or delete may settle a send that has
// no task id without cancelling anything: only when nothing can be running
// (the request never left), or the agent cannot list (then the lease bounds
// the task). Otherwise the task is looked up first and its look-up retried
// until --cancel-timeout.
func LookUpSettles(last v1alpha1.SendResult, canList bool) bool {
	return last == v1alpha1.SendNotSent || !canList
}
