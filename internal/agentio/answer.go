/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// Answers: what a call came to, the store the reconciler takes them from,
// and the Fingerprint that tells a changed task report from a renewal.

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
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

// Take returns and forgets the answer of a finished call.
func (d *Dispatcher) Take(key Key) (Answer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	d.results = shrinkmap.Delete(d.results, key, &d.peaks.results)
	return res, ok
}

// answerWaiting reports an answered call whose result the reconciler has
// not taken yet.
func (d *Dispatcher) answerWaiting(key Key) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	return ok && res.Err == nil
}

// Peek returns the result of a finished call without taking it.
func (d *Dispatcher) Peek(key Key) (Answer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	res, ok := d.results[key]
	return res, ok
}

// Restore puts back a result whose application could not be written; the
// caller's retry takes it again.
func (d *Dispatcher) Restore(key Key, res Answer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.results[key]; !ok {
		d.results[key] = res
	}
}

// Fingerprint is what a read reported, as far as the Delegation's status
// shows it: state, status text, whether a lease is held, spend, and the
// result once the task ended (status keeps no result before). The lease's
// new expiry alone is not in it: a renewal is not a change.
func Fingerprint(t *a2a.Task, err error) string {
	switch {
	case a2a.IsTaskNotFound(err):
		return "error:not-found"
	case err != nil:
		return "error"
	case t == nil:
		return ""
	}
	state := t.State
	if state == a2a.StateSubmitted {
		// Submitted and Working are both Running: a task that only started
		// working is not worth a status write.
		state = a2a.StateWorking
	}
	// A hash, not the text: one is kept per followed task. Written field
	// by field (no encoding/json): a renewal computes one.
	h := fnv.New64a()
	field(h, string(state), t.StatusText, t.FailureClass, strconv.FormatBool(!t.LeaseExpiresAt.IsZero()))
	if t.State.Terminal() {
		field(h, t.ResultText, strconv.Itoa(len(t.Artifacts)))
	}
	if t.Usage != nil {
		for _, name := range slices.Sorted(maps.Keys(t.Usage.Spent)) {
			field(h, name, strconv.FormatInt(t.Usage.Spent[name], 10))
		}
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
