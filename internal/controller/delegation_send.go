/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// Sending and replying when an answer can be lost. The decisions are made
// in internal/delegation (ambiguous.go); here they are carried out.

// sendTask sends the first message, after resolving a send marker left by an
// earlier pass: the task is looked up and adopted, or the send is made again
// only when that is sure not to start a second task.
func (r *DelegationReconciler) sendTask(ctx context.Context, s *scope, c a2a.Client) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	st := &s.d.Status
	contextID := delegation.ContextID(&s.d.Spec, string(s.d.UID))
	canList := agentCanList(s.agent)
	if st.SendStarted != nil {
		plan := delegation.PendingSend(st.SendResult, canList)
		if plan == delegation.PlanLookUp {
			t, listed, err := r.lookUpSent(ctx, s, c)
			switch {
			case err != nil:
				log.Info("cannot look up the task of an earlier send; will retry", "error", err.Error())
				r.noteSend(s, "looking up the task of an earlier send: "+err.Error())
				return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
			case t != nil:
				return r.adoptSent(ctx, s, c, t)
			case !listed:
				plan = delegation.PendingSend(st.SendResult, false)
			default:
				plan = delegation.AfterLookUp(st.SendResult)
			}
		}
		switch plan {
		case delegation.PlanGiveUp:
			r.setPhase(s, delegation.SendOutcomeUnknown("the send may have reached the agent, which cannot list tasks: "+
				"it is not sent again; a lease, if any, bounds a task started by it"))
			return ctrl.Result{}, nil
		case delegation.PlanWait:
			r.noteSend(s, "the answer to the send was lost; looking for the task at the agent")
			return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
		}
	}
	// Record the send before making it, so a crash in between is followed
	// by a look-up instead of a second send.
	if st.SendStarted == nil {
		now := metav1.NewTime(s.now)
		st.SendStarted = &now
	}
	st.SendResult = v1alpha1.SendInFlight
	r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, "sending to agent "+s.d.Spec.AgentRef.Name))
	if err := r.persistStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	t, err := c.Send(ctx, r.sendRequest(s, contextID))
	res := callResult(err)
	switch res {
	case delegation.CallAccepted:
		st.SendResult = ""
		st.TaskID, st.ContextID = t.ID, t.ContextID
		if st.ContextID == "" {
			st.ContextID = contextID
		}
		r.recordLease(s, t)
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonSent, "sent as task "+t.ID))
		return r.applyTask(ctx, s, c, t)
	case delegation.CallRefused:
		st.SendResult = ""
		r.setPhase(s, delegation.SendRefused(a2a.FailureClassOf(err), err.Error()))
		return ctrl.Result{}, nil
	}
	result, plan := delegation.AfterSend(res, canList)
	st.SendResult = result
	if plan == delegation.PlanGiveUp {
		r.setPhase(s, delegation.SendOutcomeUnknown("the answer to the send was lost and the agent cannot list tasks: "+
			"it is not sent again; a lease, if any, bounds a task started by it: "+err.Error()))
		return ctrl.Result{}, nil
	}
	log.Info("send failed; will look the task up or send again", "result", string(res), "error", err.Error())
	r.noteSend(s, "the send did not complete: "+err.Error())
	return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
}

// noteSend shows why a send is still pending, without changing its phase.
func (r *DelegationReconciler) noteSend(s *scope, msg string) {
	if o := s.d.Status.Outcome; o != nil {
		o.Message = truncate(msg, maxOutcomeMessage)
	}
}

// adoptSent follows a task an earlier send started.
func (r *DelegationReconciler) adoptSent(ctx context.Context, s *scope, c a2a.Client, t *a2a.Task) (ctrl.Result, error) {
	st := &s.d.Status
	logf.FromContext(ctx).Info("adopted the task of an earlier send", "task", t.ID)
	sendAdoptions.Inc()
	st.TaskID, st.ContextID, st.SendResult = t.ID, t.ContextID, ""
	r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, "adopted task "+t.ID+" of an earlier send"))
	// ListTasks answers without artifacts: read the task in full, so one
	// that already finished keeps its result.
	t, err := c.Get(ctx, t.ID, s.d.Spec.Lease != nil)
	if err != nil {
		return r.remoteError(ctx, s, err)
	}
	return r.applyTask(ctx, s, c, t)
}

// lookUpSent looks for the task of a send whose answer was lost. listed is
// false when the agent cannot list tasks for the operator (0.3, no
// ListTasks, ListTasks only for authenticated callers): then nothing can be
// found. An error means the look-up may work later.
func (r *DelegationReconciler) lookUpSent(ctx context.Context, s *scope, c a2a.Client) (t *a2a.Task, listed bool, err error) {
	if !agentCanList(s.agent) {
		return nil, false, nil
	}
	tasks, err := c.ListByContext(ctx, delegation.ContextID(&s.d.Spec, string(s.d.UID)))
	if err != nil {
		// An agent that refuses to list, or a context too large to read,
		// cannot tell us: the same as an agent that cannot list.
		if errors.Is(err, a2a.ErrCannotList) || errors.Is(err, a2a.ErrTooManyTasks) || callResult(err) == delegation.CallRefused {
			return nil, false, nil
		}
		return nil, true, err
	}
	t, err = delegation.OwnTask(tasks, string(s.d.UID), s.d.Spec.Message != nil && s.d.Spec.Message.ContextID != "")
	return t, true, err
}

// sendReply sends the claimed reply spec.replies[repliesSent-1]. The claim
// is given back only when nothing reached the agent; after a lost answer it
// is kept with status.replyInFlight, and the task is read before any re-send.
func (r *DelegationReconciler) sendReply(ctx context.Context, s *scope, c a2a.Client, step delegation.Step) (ctrl.Result, error) {
	st := &s.d.Status
	i := int(st.RepliesSent) - 1
	if r.beforeReplySend != nil {
		r.beforeReplySend(ctx)
	}
	_, err := c.Send(ctx, replyRequest(s.d, i))
	res := callResult(err)
	if res == delegation.CallAccepted {
		st.ReplyInFlight = false
		st.RemoteState = string(a2a.StateWorking)
		r.setPhase(s, step)
		return ctrl.Result{RequeueAfter: delegation.NextCheck(s.observation(r.Options), pollInterval(s.agent))}, nil
	}
	if delegation.ReplyAfterSend(res) {
		// Agents may refuse a reply for a moment after asking for input
		// (the task is not yet free): retry rather than fail the task.
		st.RepliesSent--
		st.ReplyInFlight = false
	}
	return r.remoteError(ctx, s, err)
}

// checkReply settles a claimed reply against the task read back: resend
// says the same reply is to be sent again; wait that it cannot be told yet
// (the look-up failed), so nothing else is sent this pass.
func (r *DelegationReconciler) checkReply(ctx context.Context, s *scope, t *a2a.Task) (resend, wait bool) {
	st := &s.d.Status
	i := int(st.RepliesSent) - 1
	if i < 0 || i >= len(s.d.Spec.Replies) {
		st.ReplyInFlight = false
		return false, false
	}
	if t.State == a2a.StateInputRequired && len(t.MessageIDs) == 0 {
		// Polls ask for no history; the look-up by context returns the
		// recent messages, which tell whether the reply arrived.
		var err error
		if t, err = r.withRecentMessages(ctx, s, t); err != nil {
			logf.FromContext(ctx).Info("cannot tell whether a reply arrived; will look again", "error", err.Error())
			return false, true
		}
	}
	switch delegation.CheckReply(t, delegation.MessageID(string(s.d.UID), i)) {
	case delegation.ReplyMissing:
		logf.FromContext(ctx).Info("a claimed reply did not reach the agent; sending it again", "reply", i)
		return true, false
	case delegation.ReplyUnconfirmed:
		r.Recorder.Eventf(s.d, nil, "Warning", "ReplyUnconfirmed", "Reply",
			"reply %d may not have reached the agent, which returns no history; it is not sent again", i)
	}
	st.ReplyInFlight = false
	return false, false
}

// withRecentMessages returns t with the client's recent message ids, read by
// listing the task's context; t as it is when the agent cannot list. An
// error means the look-up may work later.
func (r *DelegationReconciler) withRecentMessages(ctx context.Context, s *scope, t *a2a.Task) (*a2a.Task, error) {
	if !agentCanList(s.agent) || s.d.Status.ContextID == "" {
		return t, nil
	}
	c, err := r.client(ctx, s)
	if err != nil {
		return t, err
	}
	tasks, err := c.ListByContext(ctx, s.d.Status.ContextID)
	if errors.Is(err, a2a.ErrCannotList) || errors.Is(err, a2a.ErrTooManyTasks) || callResult(err) == delegation.CallRefused {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	for _, listed := range tasks {
		if listed.ID == t.ID {
			out := *t
			out.MessageIDs = listed.MessageIDs
			return &out, nil
		}
	}
	return t, nil
}
