/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

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

// sendTask sends the first message, after resolving a send marker left by an
// earlier pass: the task is looked up and adopted, or the send is made again
// only when that is sure not to start a second task.
func (r *DelegationReconciler) sendTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.d.Status
	if st.SendStarted == nil {
		// Record the send before making it, so a crash in between is
		// followed by a look-up instead of a second send. The marker rides
		// on the finalizer's optimistic-locked patch: its success also
		// proves the cache was fresh.
		if err := r.markSend(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if st.StartTime == nil {
			r.markStarted(s)
		}
		// Status is written when the answer comes: Running is the next write.
		s.skipStatus = true
		r.dispatchSend(s)
		return ctrl.Result{}, nil
	}
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if st.StartTime == nil {
		r.markStarted(s)
	}
	return r.pendingSend(ctx, s, agentio.CanList(s.agent))
}

// pendingSend does what delegation.PendingSend decides for a send marker
// without a task id: look the task up, send again, or give up.
func (r *DelegationReconciler) pendingSend(ctx context.Context, s *scope, canList bool) (ctrl.Result, error) {
	return r.carryOut(ctx, s, delegation.PendingSend(s.d.Status.SendResult, canList))
}

// carryOut does what a decision about a send without a task id says: settle
// with its record, show its note and come back (the next pass acts on
// status.sendResult), look the task up now, or send the same message again.
func (r *DelegationReconciler) carryOut(ctx context.Context, s *scope, step delegation.SendStep) (ctrl.Result, error) {
	switch {
	case step.Plan == delegation.PlanGiveUp:
		r.setPhase(s, step.Record)
		return ctrl.Result{}, nil
	case step.Note != "":
		r.noteSend(s, step.Note)
		return ctrl.Result{RequeueAfter: retryDelay(s.now, sendSince(&s.d.Status, s.now))}, nil
	case step.Plan == delegation.PlanLookUp:
		r.dispatchLookUp(s)
		return ctrl.Result{}, nil
	}
	logf.FromContext(ctx).Info("sending the same message again", "sendResult", string(s.d.Status.SendResult))
	return r.resend(ctx, s)
}

// adopt follows a task that was sent before (found by a look-up) or that
// spec.taskID names, and applies what it was read back as.
func (r *DelegationReconciler) adopt(ctx context.Context, s *scope, res agentio.Answer, msg string) (ctrl.Result, error) {
	t := res.Task
	delegation.RecordTask(&s.d.Status, t.ID, t.ContextID)
	r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, msg))
	if res.Err != nil { // the full read failed; the scheduler reads it again
		return r.remoteError(ctx, s, res.Err)
	}
	return r.applyTask(ctx, s, t)
}

// resend records that a send is being made again, then makes it.
func (r *DelegationReconciler) resend(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.d.Status
	st.SendResult = v1alpha1.SendInFlight
	r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, "sending to agent "+s.d.Spec.AgentRef.Name))
	if err := r.persistStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.dispatchSend(s)
	return ctrl.Result{}, nil
}

// applySend records the answer to a send, a look-up, or the adoption of
// spec.taskID.
func (r *DelegationReconciler) applySend(ctx context.Context, s *scope, res agentio.Answer) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	st, spec := &s.d.Status, &s.d.Spec
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
	switch {
	case spec.TaskID != "":
		if res.Err != nil {
			return r.remoteError(ctx, s, res.Err)
		}
		if refused, err := r.refuseAdoption(ctx, s, res.Task); refused || err != nil {
			return ctrl.Result{}, err
		}
		return r.adopt(ctx, s, res, "adopted task "+res.Task.ID)
	case res.LookUp != nil:
		return r.applyLookUp(ctx, s, res)
	}
	err := res.Err
	result := res.Class
	switch result {
	case a2a.ClassAccepted:
		t := res.Task
		contextID := t.ContextID
		if contextID == "" {
			contextID = delegation.ContextID(spec, string(s.d.UID))
		}
		delegation.RecordTask(st, t.ID, contextID)
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonSent, "sent as task "+t.ID))
		return r.applyTask(ctx, s, t)
	case a2a.ClassRefused:
		st.SendResult = ""
		r.setPhase(s, delegation.SendRefused(a2a.FailureClassOf(err), err.Error()))
		return ctrl.Result{}, nil
	}
	sendResult, step := delegation.AfterSend(result, agentio.CanList(s.agent), err.Error())
	st.SendResult = sendResult
	if step.Plan != delegation.PlanGiveUp {
		log.Info("send failed; will look the task up or send again", "result", string(result), "error", err.Error())
	}
	return r.carryOut(ctx, s, step)
}

// applyLookUp acts on a look-up of an earlier send: adopt what it found,
// or do what the look-ups proved (delegation.AfterLookUp): look again,
// send the same message again (recorded first), or give up.
func (r *DelegationReconciler) applyLookUp(ctx context.Context, s *scope, res agentio.Answer) (ctrl.Result, error) {
	lu := res.LookUp
	if res.Found() {
		logf.FromContext(ctx).Info("adopted the task of an earlier send", "task", res.Task.ID)
		sendAdoptions.Inc()
		return r.adopt(ctx, s, res, "adopted task "+res.Task.ID+" of an earlier send")
	}
	if lu.Err == nil && !lu.Listed {
		// The agent turned out not to list: what is left is what a send
		// marker at such an agent leads to.
		return r.pendingSend(ctx, s, false)
	}
	rec, _ := r.Calls.SendRecord(client.ObjectKeyFromObject(s.d))
	result := delegation.LookUpResult{NoTask: lu.Err == nil, AfterSendDeadline: lu.AfterSendDeadline,
		FailedLookUps: rec.FailedLookUps, WindowOver: delegation.SendWindowOver(s.observation(r.Options)), SendTimeout: r.Options.SendTimeout}
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

// noteSend shows why a send is still pending, without changing its phase;
// a Delegation that shows no phase yet (its first send's answer was lost or
// unusable) shows Pending, reason Sending: a phase is always shown.
func (r *DelegationReconciler) noteSend(s *scope, msg string) {
	st := &s.d.Status
	if st.Outcome == nil || st.Phase == "" {
		r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, msg))
		return
	}
	r.note(s, msg)
}

// note shows msg as the outcome's message, the phase and reason unchanged.
func (r *DelegationReconciler) note(s *scope, msg string) {
	st := &s.d.Status
	if st.Outcome == nil {
		return
	}
	out := *st.Outcome
	out.Message = msg
	r.setPhase(s, delegation.Record{Phase: st.Phase, Outcome: out})
}
