/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// cancelTask sends CancelTask (when a task may exist) and settles once the
// answer is in: the one path of every cancel (spec.cancel, a parent's end,
// a deadline, a cascade, a deletion). A failing cancel is retried until
// --cancel-timeout, then the Delegation settles with a Warning; the lease
// bounds the orphan.
func (r *DelegationReconciler) cancelTask(ctx context.Context, s *scope, step delegation.Step) (ctrl.Result, error) {
	st := &s.d.Status
	if s.d.Spec.Detach {
		// A detach may have settled this Delegation in a write the cache
		// has not shown yet: a cancel now would stop a task the user asked
		// to leave running.
		if fresh, err := r.isFresh(ctx, s.d); err != nil || !fresh {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, err
		}
	}
	if waiting := r.settleSend(s); waiting {
		return ctrl.Result{}, nil
	}
	if step.Outcome.Reason == delegation.ReasonLeaseLapsed {
		delegation.RecordLapse(st, s.now)
	}
	since := r.requestCancel(s, step)
	res, answered := r.take(s, callKey(s.d, agentio.KindCancel))
	nothingSent := st.SendStarted == nil || st.SendResult == v1alpha1.SendNotSent
	if !answered && st.TaskID == "" && nothingSent {
		return r.applyCancel(ctx, s, step, agentio.Answer{}, since) // nothing to cancel
	}
	if !answered {
		res = agentio.Answer{Err: errors.New("the Agent no longer exists")}
		if s.agent != nil {
			if !r.Calls.State(callKey(s.d, agentio.KindCancel)).Pending {
				r.dispatchCancel(s.d, s.agent)
			}
			if left := r.Options.CancelTimeout - s.now.Sub(since); left > 0 {
				// The answer wakes this Delegation; the bound still holds.
				return ctrl.Result{RequeueAfter: max(left, time.Second)}, nil
			}
			res = agentio.Answer{Err: errors.New("no answer to CancelTask")}
		}
	}
	return r.applyCancel(ctx, s, step, res, since)
}

// requestCancel records when the cancel was first asked for, the start of
// its --cancel-timeout, and returns it. A deletion's bound starts at the
// deletion and costs no write: the object goes once the cancel is in.
func (r *DelegationReconciler) requestCancel(s *scope, step delegation.Step) time.Time {
	st := &s.d.Status
	switch {
	case st.CancelRequested != nil:
		return st.CancelRequested.Time
	case !s.d.DeletionTimestamp.IsZero():
		return s.d.DeletionTimestamp.Time
	case !delegation.Started(st):
		return s.now
	}
	if strings.HasPrefix(step.Outcome.Reason, "Parent") {
		cascadeCancels.WithLabelValues(step.Outcome.Reason).Inc()
	}
	now := metav1.NewTime(s.now)
	st.CancelRequested = &now
	return s.now
}

// isFresh reports whether the cached copy is the API server's latest.
func (r *DelegationReconciler) isFresh(ctx context.Context, d *v1alpha1.Delegation) (bool, error) {
	var latest v1alpha1.Delegation
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), &latest); err != nil {
		return false, err
	}
	return latest.ResourceVersion == d.ResourceVersion, nil
}

// settleSend makes sure no send is on its way before a cancel: a send still
// queued is dropped; a running one is waited for, and its task id taken,
// so the cancel reaches the task it started.
func (r *DelegationReconciler) settleSend(s *scope) (waiting bool) {
	key := callKey(s.d, agentio.KindStart)
	if r.Calls.State(key).Pending && !r.Calls.Drop(key) {
		return true
	}
	if res, ok := r.take(s, key); ok && s.d.Status.TaskID == "" {
		if t := res.Task; t != nil && t.ID != "" {
			delegation.RecordTask(&s.d.Status, t.ID, t.ContextID)
		}
	}
	return false
}

// applyCancel records the answer to a CancelTask (and to the look-up of a
// send's task before it); since is when the cancel was asked for.
func (r *DelegationReconciler) applyCancel(ctx context.Context, s *scope, step delegation.Step, res agentio.Answer,
	since time.Time) (ctrl.Result, error) {
	st, rec := &s.d.Status, step.Record()
	if st.TaskID == "" && res.TaskID != "" {
		// The task of a send whose answer never came: recorded, so no task
		// of this Delegation runs unowned.
		delegation.RecordTask(st, res.TaskID, "")
		r.Recorder.Eventf(s.d, nil, "Normal", "TaskOfLostSendCancelled", "Cancel",
			"the cancel found task %s of a send whose answer was lost, and cancelled it", truncate(res.TaskID, 256))
	}
	action := "Cancel"
	if !s.d.DeletionTimestamp.IsZero() {
		action = "Delete"
	}
	left := r.Options.CancelTimeout - s.now.Sub(since)
	retry := ctrl.Result{RequeueAfter: min(retryDelay(s.now, since), max(left, time.Second))}
	lookUpErr := lookUpError(res)
	confirmed := false
	switch {
	case lookUpErr != nil && left > 0:
		logf.FromContext(ctx).Info("cannot look up the task to cancel; retrying", "error", lookUpErr.Error())
		return retry, nil
	case lookUpErr != nil:
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", action,
			"the task of the send could not be looked up within %s: %s", r.Options.CancelTimeout, truncate(lookUpErr.Error(), 800))
		rec.Outcome.Message += "; the task of the send could not be looked up to cancel it"
	case lookedUpEarly(res) && left > 0:
		logf.FromContext(ctx).Info("no task of the send is listed yet, but the send may still be on its way; looking again")
		return retry, nil
	case lookedUpEarly(res):
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", action,
			"no task of the send was listed within %s, but the send's deadline had not passed: "+
				"a late send may still start one; a lease, if any, bounds it", r.Options.CancelTimeout)
		rec.Outcome.Message += "; no task of the send was listed, but a late send may still start one"
	case cancelUnconfirmed(res):
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", action,
			"the send may have reached the agent, which cannot list tasks: nothing could be cancelled; a lease, if any, bounds the task")
		rec.Outcome.Message += "; the send may have reached the agent, which cannot list tasks"
	case res.Err != nil && left > 0:
		logf.FromContext(ctx).Info("cancel failed; retrying", "error", res.Err.Error())
		return retry, nil
	case res.Err != nil:
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", action,
			"the agent did not confirm the cancel of task %s within %s: %s", st.TaskID, r.Options.CancelTimeout, truncate(res.Err.Error(), 800))
		rec.Outcome.Message += "; the agent did not confirm the cancel"
	default:
		confirmed = true
	}
	if t := res.Task; t != nil {
		// The task's last report: what it is charged when it finished
		// before the cancel arrived, and then what it did.
		finished := t.State.Terminal() && t.State != a2a.StateCanceled
		r.recordRead(s, t, finished)
		if finished {
			rec = delegation.AfterRead(s.observation(), t).Record
		}
	}
	var result ctrl.Result
	if step.Outcome.Reason == delegation.ReasonLeaseLapsed {
		rec, result = r.endLapsedAttempt(s, rec, confirmed)
	}
	r.setPhase(s, rec)
	return result, nil
}

// endLapsedAttempt ends an attempt whose lease lapsed once its cancel was
// answered: the next attempt may follow only when the agent confirmed the
// cancel (or the task had ended before it), never while the task may run.
// It returns the record to apply and when to come back for the next attempt.
func (r *DelegationReconciler) endLapsedAttempt(s *scope, rec delegation.Record, confirmed bool) (delegation.Record, ctrl.Result) {
	if !confirmed {
		rec = delegation.CancelUnconfirmed(rec)
	}
	rec, again, wait := r.endAttempt(s, rec)
	if again {
		return rec, retryLater(wait)
	}
	return rec, ctrl.Result{}
}

// lookUpError is the error of a cancel's look-up of the send's task, if any.
func lookUpError(res agentio.Answer) error {
	if res.LookUp == nil {
		return nil
	}
	return res.LookUp.Err
}

// lookedUpEarly: the cancel's look-up found no task of the send, but before
// the send's deadline (and the agent's listing lag) passed, so it proves
// nothing yet.
func lookedUpEarly(res agentio.Answer) bool {
	return res.ProvedNoTask() && res.TaskID == "" && !res.LookUp.AfterSendDeadline
}

// cancelUnconfirmed: the send may have reached an agent that cannot list
// tasks; nothing could be cancelled.
func cancelUnconfirmed(res agentio.Answer) bool {
	return res.LookUp != nil && res.LookUp.Err == nil && !res.LookUp.Listed
}
