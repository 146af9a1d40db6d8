/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
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
		r.dispatchSend(s, false)
		return ctrl.Result{}, nil
	}
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if st.StartTime == nil {
		r.markStarted(s)
	}
	switch delegation.PendingSend(st.SendResult, agentCanList(s.agent)) {
	case delegation.PlanGiveUp:
		r.setPhase(s, delegation.SendOutcomeUnknown("the send may have reached the agent, which cannot list tasks: "+
			"it is not sent again; a lease, if any, bounds a task started by it"))
		return ctrl.Result{}, nil
	case delegation.PlanLookUp:
		r.dispatchSend(s, true)
		return ctrl.Result{}, nil
	}
	return r.resend(ctx, s)
}

// resend records that a send is being made again, then makes it.
func (r *DelegationReconciler) resend(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := &s.d.Status
	st.SendResult = v1alpha1.SendInFlight
	r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, "sending to agent "+s.d.Spec.AgentRef.Name))
	if err := r.persistStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	r.dispatchSend(s, false)
	return ctrl.Result{}, nil
}

// applySend records the answer to a send, a look-up, or the adoption of
// spec.taskID.
func (r *DelegationReconciler) applySend(ctx context.Context, s *scope, res agentio.Result) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	st, spec := &s.d.Status, &s.d.Spec
	out, _ := res.Value.(sendOutcome)
	recordSentTerms(st, out.sent)
	if st.StartTime == nil {
		r.markStarted(s)
		if out.sent.deadline != nil {
			st.Deadline = out.sent.deadline.DeepCopy() // what the agent was told
		}
	}
	switch {
	case spec.TaskID != "":
		if res.Err != nil {
			return r.remoteError(ctx, s, res.Err)
		}
		if refused, err := r.refuseAdoption(ctx, s, out.task); refused || err != nil {
			return ctrl.Result{}, err
		}
		st.TaskID, st.ContextID = out.task.ID, out.task.ContextID
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, "adopted task "+out.task.ID))
		return r.applyTask(ctx, s, out.task)
	case out.lookedUp:
		return r.applyLookUp(ctx, s, out, res.Err)
	}
	err := res.Err
	result := callResult(err)
	switch result {
	case delegation.CallAccepted:
		t := out.task
		st.SendResult = ""
		st.TaskID, st.ContextID = t.ID, t.ContextID
		if st.ContextID == "" {
			st.ContextID = delegation.ContextID(spec, string(s.d.UID))
		}
		r.recordLease(s, t)
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonSent, "sent as task "+t.ID))
		return r.applyTask(ctx, s, t)
	case delegation.CallRefused:
		st.SendResult = ""
		r.setPhase(s, delegation.SendRefused(a2a.FailureClassOf(err), err.Error()))
		return ctrl.Result{}, nil
	}
	sendResult, plan := delegation.AfterSend(result, agentCanList(s.agent))
	st.SendResult = sendResult
	if plan == delegation.PlanGiveUp {
		r.setPhase(s, delegation.SendOutcomeUnknown("the answer to the send was lost and the agent cannot list tasks: "+
			"it is not sent again; a lease, if any, bounds a task started by it: "+err.Error()))
		return ctrl.Result{}, nil
	}
	log.Info("send failed; will look the task up or send again", "result", string(result), "error", err.Error())
	r.noteSend(s, "the send did not complete: "+err.Error())
	return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
}

// applyLookUp acts on a look-up of an earlier send: adopt what it found,
// wait, give up, or send again (recorded first).
func (r *DelegationReconciler) applyLookUp(ctx context.Context, s *scope, out sendOutcome, err error) (ctrl.Result, error) {
	st := &s.d.Status
	switch {
	case out.lookupErr != nil:
		logf.FromContext(ctx).Info("cannot look up the task of an earlier send; will retry", "error", out.lookupErr.Error())
		r.noteSend(s, "looking up the task of an earlier send: "+out.lookupErr.Error())
		return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
	case out.task != nil:
		logf.FromContext(ctx).Info("adopted the task of an earlier send", "task", out.task.ID)
		sendAdoptions.Inc()
		st.TaskID, st.ContextID, st.SendResult = out.task.ID, out.task.ContextID, ""
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, "adopted task "+out.task.ID+" of an earlier send"))
		if err != nil { // the full read failed; the scheduler reads it again
			return r.remoteError(ctx, s, err)
		}
		return r.applyTask(ctx, s, out.task)
	}
	plan := delegation.AfterLookUp(st.SendResult)
	if !out.listed {
		plan = delegation.PendingSend(st.SendResult, false)
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
	return r.resend(ctx, s)
}

// noteSend shows why a send is still pending, without changing its phase.
func (r *DelegationReconciler) noteSend(s *scope, msg string) {
	if o := s.d.Status.Outcome; o != nil {
		o.Message = truncate(msg, maxOutcomeMessage)
	}
}

// lookUpSent looks for the task of a send whose answer was lost. listed is
// false when the agent cannot list tasks for the operator (0.3, no
// ListTasks, ListTasks only for authenticated callers): then nothing can be
// found. An error means the look-up may work later. It runs on the pool.
func lookUpSent(ctx context.Context, c a2a.Client, canList bool, contextID, uid string, ownContext bool) (t *a2a.Task, listed bool, err error) {
	if !canList {
		return nil, false, nil
	}
	tasks, err := c.ListByContext(ctx, contextID)
	if err != nil {
		// An agent that refuses to list, or a context too large to read,
		// cannot tell us: the same as an agent that cannot list.
		if cannotList(err) {
			return nil, false, nil
		}
		return nil, true, err
	}
	t, err = delegation.OwnTask(tasks, uid, ownContext)
	return t, true, err
}

// sendReply sends the claimed reply spec.replies[repliesSent-1] on the pool.
func (r *DelegationReconciler) sendReply(ctx context.Context, s *scope) (ctrl.Result, error) {
	if r.beforeReplySend != nil {
		r.beforeReplySend(ctx)
	}
	if err := ctx.Err(); err != nil {
		return ctrl.Result{}, err // the operator is stopping: send nothing more
	}
	r.dispatchReply(s, int(s.d.Status.RepliesSent)-1)
	return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation(r.Options))}, nil
}

// applyReply records the answer to a reply. The claim is given back only
// when nothing reached the agent; after a lost answer it is kept with
// status.replyInFlight, and the task is read before any re-send.
func (r *DelegationReconciler) applyReply(ctx context.Context, s *scope, res agentio.Result) (ctrl.Result, error) {
	st := &s.d.Status
	result := callResult(res.Err)
	if result == delegation.CallAccepted {
		st.ReplyInFlight = false
		st.RemoteState = string(a2a.StateWorking)
		r.setPhase(s, delegation.ReplySent())
		return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation(r.Options))}, nil
	}
	if delegation.ReplyAfterSend(result) {
		// Agents may refuse a reply for a moment after asking for input
		// (the task is not yet free): retry rather than fail the task.
		st.RepliesSent--
		st.ReplyInFlight = false
	}
	r.dispatchGet(s) // read the task before the next attempt
	return r.remoteError(ctx, s, res.Err)
}

// checkReply settles a claimed reply against the task read back: resend
// says the same reply is to be sent again. The read that brought t also
// listed the client's recent messages when the task carried none (see
// readTask), so nothing here waits on the agent.
func (r *DelegationReconciler) checkReply(ctx context.Context, s *scope, t *a2a.Task) (resend bool) {
	st := &s.d.Status
	i := int(st.RepliesSent) - 1
	if i < 0 || i >= len(s.d.Spec.Replies) {
		st.ReplyInFlight = false
		return false
	}
	switch delegation.CheckReply(t, delegation.MessageID(string(s.d.UID), i)) {
	case delegation.ReplyMissing:
		logf.FromContext(ctx).Info("a claimed reply did not reach the agent; sending it again", "reply", i)
		return true
	case delegation.ReplyUnconfirmed:
		r.Recorder.Eventf(s.d, nil, "Warning", "ReplyUnconfirmed", "Reply",
			"reply %d may not have reached the agent, which returns no history; it is not sent again", i)
	}
	st.ReplyInFlight = false
	return false
}

// readTask reads a task on the Agent's pool. With a reply in flight whose
// answer was lost, a task read without the client's recent message ids is
// completed by listing its context, so the reply can be checked; a failed
// listing fails the read, which is retried at the task's cadence.
func readTask(ctx context.Context, c a2a.Client, id string, lease bool, replyCheck *replyLookUp) (*a2a.Task, error) {
	t, err := c.Get(ctx, id, lease)
	if err != nil || replyCheck == nil || len(t.MessageIDs) > 0 {
		return t, err
	}
	tasks, err := c.ListByContext(ctx, replyCheck.contextID)
	if cannotList(err) {
		return t, nil
	}
	if err != nil {
		return nil, err
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

// replyLookUp says a read must also find the client's recent messages.
type replyLookUp struct{ contextID string }

// replyCheckOf is the look-up a read of this Delegation's task needs: one
// only while a reply's answer is unknown and the agent can list.
func replyCheckOf(d *v1alpha1.Delegation, agent *v1alpha1.Agent) *replyLookUp {
	if !d.Status.ReplyInFlight || d.Status.ContextID == "" || !agentCanList(agent) {
		return nil
	}
	return &replyLookUp{contextID: d.Status.ContextID}
}

// cannotList: an agent that refuses to list, or a context too large to
// read, cannot tell us anything: the same as an agent that cannot list.
func cannotList(err error) bool {
	return errors.Is(err, a2a.ErrUnsupported) || errors.Is(err, a2a.ErrCannotList) || errors.Is(err, a2a.ErrTooManyTasks) ||
		callResult(err) == delegation.CallRefused
}
