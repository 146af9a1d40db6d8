/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// sendReply sends the claimed reply spec.replies[repliesSent-1] on the pool.
func (r *DelegationReconciler) sendReply(ctx context.Context, s *scope) (ctrl.Result, error) {
	if r.beforeReplySend != nil {
		r.beforeReplySend(ctx)
	}
	if err := ctx.Err(); err != nil {
		return ctrl.Result{}, err // the operator is stopping: send nothing more
	}
	r.dispatchReply(s, int(s.d.Status.RepliesSent)-1)
	return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation())}, nil
}

// applyReply records the answer to a reply. The claim is given back only
// when nothing reached the agent; after a lost answer it is kept with
// status.replyInFlight, and the task is read before any re-send.
func (r *DelegationReconciler) applyReply(ctx context.Context, s *scope, res agentio.Answer) (ctrl.Result, error) {
	st := &s.d.Status
	result := res.Class
	if result == a2a.ClassAccepted {
		delegation.ChangeReply(st, delegation.ReplyDone)
		st.RemoteState = string(a2a.StateWorking)
		r.setPhase(s, delegation.ReplyAccepted())
		// A read answered while the reply was on its way may show the task
		// as it was before it: drop it and read again. The Dispatcher makes
		// this read after any read still on its way (whose answer may
		// predate the reply too), and hands its answer on even when it
		// looks like what was applied before the reply.
		r.Calls.Take(callKey(s.d, agentio.KindGet))
		r.dispatchGet(s)
		return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation())}, nil
	}
	if delegation.ReplyAfterSend(result) {
		// Agents may refuse a reply for a moment after asking for input
		// (the task is not yet free): retry rather than fail the task.
		delegation.ChangeReply(st, delegation.ReplyGivenBack)
	}
	r.dispatchGet(s) // read the task before the next attempt
	return r.applyRead(ctx, s, nil, res.Err)
}

// checkReply settles a claimed reply against the task read back: resend
// says the same reply is to be sent again. The read that brought t also
// listed the client's recent messages when the task carried none (see
// readRequest), so nothing here waits on the agent.
func (r *DelegationReconciler) checkReply(ctx context.Context, s *scope, t *a2a.Task) (resend bool) {
	st := &s.d.Status
	i := int(st.RepliesSent) - 1
	if i < 0 || i >= len(s.d.Spec.Replies) {
		delegation.ChangeReply(st, delegation.ReplyDone)
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
	delegation.ChangeReply(st, delegation.ReplyDone)
	return false
}
