/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
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

// Sending and replying when an answer can be lost. The decisions are made
// in internal/delegation (ambiguous.go); here they are carried out: the
// calls go through the Agent's pool (delegation_calls.go) and the pass that
// finds their answer applies it.

// sendNext is what a decision about starting the task leaves to its pass:
// the record status shows (nil: unchanged), then the same message sent
// again (recorded first), the task the answer brought read, or the pass's
// result.
type sendNext struct {
	record *delegation.Record
	resend bool
	// read: the answer brought a task (sent, adopted, found), or the read
	// of one failed (readErr); it is applied after the record is shown.
	read    bool
	task    *a2a.Task
	readErr error
	res     ctrl.Result
}

// sendTask sends the first message, after resolving a send marker left by an
// earlier pass: the task is looked up and adopted, or the send is made again
// only when that is sure not to start a second task.
func (r *DelegationReconciler) sendTask(ctx context.Context, s *scope) (sendNext, error) {
	st := &s.d.Status
	if st.SendStarted == nil {
		// Record the send before making it, so a crash in between is
		// followed by a look-up instead of a second send. The marker rides
		// on the finalizer's optimistic-locked patch: its success also
		// proves the cache was fresh.
		if err := r.markSend(ctx, s); err != nil {
			return sendNext{}, err
		}
		if st.StartTime == nil {
			r.markStarted(s)
		}
		// Status is written when the answer comes: Running is the next write.
		s.skipStatus = true
		r.dispatchSend(s)
		return sendNext{}, nil
	}
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return sendNext{}, err
	}
	if st.StartTime == nil {
		r.markStarted(s)
	}
	return r.carryOut(ctx, s, delegation.PendingSend(st.SendResult, agentio.CanList(s.agent))), nil
}

// carryOut does what a decision about a send without a task id says: settle
// with its record, show its note and come back (the next pass acts on
// status.sendResult), look the task up now, or send the same message again.
func (r *DelegationReconciler) carryOut(ctx context.Context, s *scope, step delegation.SendStep) sendNext {
	st := &s.d.Status
	switch {
	case step.Plan == delegation.PlanGiveUp:
		return sendNext{record: &step.Record}
	case step.Plan == delegation.PlanSend && s.agentObs.NotGranted:
		// A send is made again only under a grant (one stopped as it
		// would leave, or whose look-up proved it never arrived); a grant
		// wakes this Delegation.
		rec := delegation.NotGranted(&s.d.Spec).Record()
		return sendNext{record: &rec}
	case step.Note != "":
		rec := delegation.SendNoted(st, step.Note)
		return sendNext{record: &rec, res: ctrl.Result{RequeueAfter: retryDelay(s.now, sendSince(st, s.now))}}
	case step.Plan == delegation.PlanLookUp:
		r.dispatchLookUp(s)
		return sendNext{}
	}
	logf.FromContext(ctx).Info("sending the same message again", "sendResult", string(st.SendResult))
	st.SendResult = v1alpha1.SendInFlight
	rec := delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, "sending to agent "+s.d.Spec.AgentRef.Name)
	return sendNext{record: &rec, resend: true}
}

// sendAgain makes the send again once status shows it is being made, with
// its new deadline.
func (r *DelegationReconciler) sendAgain(ctx context.Context, s *scope) (ctrl.Result, error) {
	terms := r.sendTerms(s)
	deadline := metav1.NewTime(terms.Deadline)
	s.d.Status.SendDeadline, s.sendLeaveBy = &deadline, terms.LeaveBy
	if err := r.persistStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.dispatchSend(s)
	return ctrl.Result{}, nil
}

// applySend applies the answer to a send, a look-up, or the adoption of
// spec.taskID: status shows the one record it comes to, then the task it
// brought is read, or the send is made again.
func (r *DelegationReconciler) applySend(ctx context.Context, s *scope, res agentio.Answer) (ctrl.Result, error) {
	st := &s.d.Status
	// The terms are dropped once what this pass made of the answer is
	// written (see finishPass): a pass whose write fails puts the answer
	// back, and the next one needs them again.
	key := client.ObjectKeyFromObject(s.d)
	sent, _ := r.memory.sentTerms.Load(key)
	terms, _ := sent.(sentTerms)
	if sent != nil {
		s.afterWrite = append(s.afterWrite, func(context.Context) { r.memory.sentTerms.CompareAndDelete(key, sent) })
	}
	recordSentTerms(st, terms)
	if st.StartTime == nil {
		r.markStarted(s)
		if terms.deadline != nil {
			st.Deadline = terms.deadline.DeepCopy() // what the agent was told
		}
	}
	next, err := r.sendAnswer(ctx, s, res)
	if err != nil {
		return ctrl.Result{}, err
	}
	again, wait := false, time.Duration(0)
	if next.record != nil && delegation.Settled(next.record.Phase) {
		// A refused send, or one given up on, ends the attempt.
		*next.record, again, wait = r.endAttempt(s, *next.record)
	}
	if next.record != nil {
		r.setPhase(s, *next.record)
	}
	switch {
	case again:
		return retryLater(wait), nil
	case next.resend:
		return r.sendAgain(ctx, s)
	case next.read:
		return r.applyRead(ctx, s, next.task, next.readErr)
	}
	return next.res, nil
}

// sendAnswer decides what an answer to a send, a look-up or an adoption
// comes to.
func (r *DelegationReconciler) sendAnswer(ctx context.Context, s *scope, res agentio.Answer) (sendNext, error) {
	st, spec := &s.d.Status, &s.d.Spec
	switch {
	case spec.TaskID != "":
		if res.Err != nil {
			return sendNext{read: true, readErr: res.Err}, nil
		}
		if refused, err := r.refuseAdoption(ctx, s, res.Task); refused != nil || err != nil {
			return sendNext{record: refused}, err
		}
		return adopted(s, res, "adopted task "+res.Task.ID), nil
	case res.LookUp != nil:
		return r.lookUpAnswer(ctx, s, res), nil
	}
	err := res.Err
	switch res.Class {
	case a2a.ClassAccepted:
		t := res.Task
		contextID := t.ContextID
		if contextID == "" {
			contextID = delegation.ContextID(spec, string(s.d.UID))
		}
		delegation.RecordTask(st, t.ID, contextID)
		rec := delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonSent, "sent as task "+t.ID)
		return sendNext{record: &rec, read: true, task: t}, nil
	case a2a.ClassRefused:
		st.SendResult = ""
		rec := delegation.SendRefused(a2a.FailureClassOf(err), err.Error())
		return sendNext{record: &rec}, nil
	}
	sendResult, step := delegation.AfterSend(res.Class, agentio.CanList(s.agent), err.Error(), delegation.KeepsTrying(spec, st))
	st.SendResult = sendResult
	if step.Plan != delegation.PlanGiveUp {
		logf.FromContext(ctx).Info("send failed; will look the task up or send again", "result", string(res.Class), "error", err.Error())
	}
	return r.carryOut(ctx, s, step), nil
}

// adopted follows a task that was sent before (found by a look-up) or that
// spec.taskID names; what it was read back as is applied next.
func adopted(s *scope, res agentio.Answer, msg string) sendNext {
	t := res.Task
	delegation.RecordTask(&s.d.Status, t.ID, t.ContextID)
	rec := delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, msg)
	// A failed full read is shown; the scheduler reads the task again.
	return sendNext{record: &rec, read: true, task: t, readErr: res.Err}
}

// lookUpAnswer acts on a look-up of an earlier send: adopt what it found,
// or do what the look-ups proved (delegation.AfterLookUp): look again,
// send the same message again (recorded first), or give up.
func (r *DelegationReconciler) lookUpAnswer(ctx context.Context, s *scope, res agentio.Answer) sendNext {
	lu := res.LookUp
	if res.Found() {
		logf.FromContext(ctx).Info("adopted the task of an earlier send", "task", res.Task.ID)
		sendAdoptions.Inc()
		return adopted(s, res, "adopted task "+res.Task.ID+" of an earlier send")
	}
	if lu.Err == nil && !lu.Listed {
		// The agent turned out not to list: what is left is what a send
		// marker at such an agent leads to.
		return r.carryOut(ctx, s, delegation.PendingSend(s.d.Status.SendResult, false))
	}
	rec, _ := r.Calls.SendRecord(client.ObjectKeyFromObject(s.d))
	result := delegation.LookUpResult{NoTask: lu.Err == nil, AfterSendDeadline: lu.AfterSendDeadline,
		FailedLookUps: rec.FailedLookUps, Until: delegation.KeepsTrying(&s.d.Spec, &s.d.Status)}
	if lu.Err != nil {
		result.Err = lu.Err.Error()
		logf.FromContext(ctx).Info("cannot look up the task of an earlier send; will retry", "error", result.Err)
	}
	return r.carryOut(ctx, s, delegation.AfterLookUp(result))
}

// sendSince is when the send was first recorded (now when status does not
// show it: its marker was removed and the send's terms are gone).
func sendSince(st *v1alpha1.DelegationStatus, now time.Time) time.Time {
	if st.SendStarted == nil {
		return now
	}
	return st.SendStarted.Time
}
