/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Answer is what one operation on an agent came to. Every operation
// returns one; the fields an operation does not use stay empty.
type Answer struct {
	// Class is the one classification of the call (a2a.Classify of Err):
	// Accepted, Refused (nothing started), Unknown (it may have), NotMade
	// (nothing left the operator).
	Class a2a.Class
	// Err is the call's error, nil when Accepted.
	Err error
	// Task is the task the agent answered with (send, adopt, read, cancel)
	// or the one a look-up found, read back in full.
	Task *a2a.Task
	// LookUp is set when the operation looked a send's task up (LookUp, or
	// Cancel of a send that has no task id).
	LookUp *LookUpAnswer
	// Card is the answer of a card read (KindCard).
	Card *CardAnswer
	// TaskID is, for a cancel, the task it was made for (found by its
	// look-up when status had none).
	TaskID string
	// Queued is when the operation was submitted; Finished when it ended.
	Queued, Finished time.Time
}

// LookUpAnswer is what a look-up of a send's task proved.
type LookUpAnswer struct {
	// Listed: the agent listed the context's tasks for the operator, so a
	// task not among them was not started (until a late send arrives).
	// False: the agent cannot list for the operator, and nothing can be
	// told from it.
	Listed bool
	// Err: the look-up got no usable answer; it may work later.
	Err error
	// AfterSendDeadline: the look-up was made after the latest send's own
	// deadline had passed, so no request of that send was still held by
	// this process when the agent answered it.
	AfterSendDeadline bool
}

// Found reports a look-up that found the send's task.
func (a Answer) Found() bool { return a.LookUp != nil && a.LookUp.Err == nil && a.Task != nil }

// ProvedNoTask reports a look-up that was answered and found no task of the
// send at an agent that lists: the one answer that shows the send did not
// reach the agent (or has not yet).
func (a Answer) ProvedNoTask() bool {
	return a.LookUp != nil && a.LookUp.Err == nil && a.LookUp.Listed && a.Task == nil
}

// answer is an Answer to a call that ended with err.
func answer(t *a2a.Task, err error) Answer { return Answer{Task: t, Err: err} }

// metricOutcome is the outcome label of the request metrics, from the one
// classification: ok, refused, or transport (no answer proving anything).
func metricOutcome(err error) string {
	switch a2a.Classify(err) {
	case a2a.ClassAccepted:
		return "ok"
	case a2a.ClassRefused:
		return "refused"
	}
	return "transport"
}
