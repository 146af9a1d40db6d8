/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import "github.com/tether-dev/tether/api/v1alpha1"

// RecordTask records the task a send started, a look-up found, a cancel's
// look-up found or spec.taskID named: the one place status.taskID and
// status.contextID are written. A context id the answer did not carry
// keeps what status holds. Once the task is known, what became of the send
// (status.sendResult) no longer matters.
func RecordTask(st *v1alpha1.DelegationStatus, id, contextID string) {
	st.TaskID = id
	if contextID != "" {
		st.ContextID = contextID
	}
	st.SendResult = ""
}

// ReplyChange is what became of the reply spec.replies[repliesSent-1].
type ReplyChange string

const (
	// ReplyClaimed: the next reply is claimed before it is sent, so a
	// stale pass cannot send it a second time.
	ReplyClaimed ReplyChange = "Claimed"
	// ReplyDone: the claimed reply is no longer on its way: the agent has
	// it, or it is counted as sent (see CheckReply).
	ReplyDone ReplyChange = "Done"
	// ReplyGivenBack: nothing reached the agent (ReplyAfterSend): the
	// claim is given back and the reply is sent again.
	ReplyGivenBack ReplyChange = "GivenBack"
)

// ChangeReply is the one place status.repliesSent and status.replyInFlight
// are written.
func ChangeReply(st *v1alpha1.DelegationStatus, c ReplyChange) {
	switch c {
	case ReplyClaimed:
		st.RepliesSent++
		st.ReplyInFlight = true
	case ReplyGivenBack:
		if st.RepliesSent > 0 {
			st.RepliesSent--
		}
		st.ReplyInFlight = false
	case ReplyDone:
		st.ReplyInFlight = false
	}
}
