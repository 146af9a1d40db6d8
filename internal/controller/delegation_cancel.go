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
// answer is in. A failing cancel is retried until --cancel-timeout, then
// the Delegation settles with a Warning; the lease bounds the orphan.
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
	if st.CancelRequested == nil && delegation.Started(st) {
		if strings.HasPrefix(step.Outcome.Reason, "Parent") {
			cascadeCancels.WithLabelValues(step.Outcome.Reason).Inc()
		}
		now := metav1.NewTime(s.now)
		st.CancelRequested = &now
	}
	res, answered := r.take(s, callKey(s.d, agentio.KindCancel))
	nothingSent := st.SendStarted == nil || st.SendResult == v1alpha1.SendNotSent
	if !answered && st.TaskID == "" && nothingSent {
		r.setPhase(s, step)
		return ctrl.Result{}, nil
	}
	if !answered {
		if s.agent == nil {
			res = agentio.Answer{Err: errors.New("the Agent no longer exists")}
		} else {
			if !r.Calls.State(callKey(s.d, agentio.KindCancel)).Pending {
				r.dispatchCancel(s.d, s.agent)
			}
			// The answer wakes this Delegation; the bound still holds.
			return ctrl.Result{RequeueAfter: max(r.Options.CancelTimeout-s.now.Sub(st.CancelRequested.Time), time.Second)}, nil
		}
	}
	return r.applyCancel(ctx, s, step, res)
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
	key := callKey(s.d, agentio.KindSend)
	if r.Calls.State(key).Pending && !r.Calls.Drop(key) {
		return true
	}
	if res, ok := r.take(s, key); ok && s.d.Status.TaskID == "" {
		if t := res.Task; t != nil && t.ID != "" {
			s.d.Status.TaskID, s.d.Status.ContextID = t.ID, t.ContextID
		}
	}
	return false
}

// applyCancel records the answer to a CancelTask (and to the look-up of a
// send's task before it).
func (r *DelegationReconciler) applyCancel(ctx context.Context, s *scope, step delegation.Step, res agentio.Answer) (ctrl.Result, error) {
	st := &s.d.Status
	if st.TaskID == "" && res.TaskID != "" {
		st.TaskID = res.TaskID
	}
	inTime := s.now.Sub(st.CancelRequested.Time) < r.Options.CancelTimeout
	lookUpErr := lookUpError(res)
	switch {
	case lookUpErr != nil && inTime:
		logf.FromContext(ctx).Info("cannot look up the task to cancel; retrying", "error", lookUpErr.Error())
		return ctrl.Result{RequeueAfter: retryDelay(s.now, st.CancelRequested.Time)}, nil
	case lookUpErr != nil:
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
			"the task of the send could not be looked up within %s: %s", r.Options.CancelTimeout, truncate(lookUpErr.Error(), 800))
		step.Outcome.Message += "; the task of the send could not be looked up to cancel it"
	case cancelUnconfirmed(res):
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
			"the send may have reached the agent, which cannot list tasks: nothing could be cancelled; a lease, if any, bounds the task")
		step.Outcome.Message += "; the send may have reached the agent, which cannot list tasks"
	case res.Err != nil && inTime:
		logf.FromContext(ctx).Info("cancel failed; retrying", "error", res.Err.Error())
		return ctrl.Result{RequeueAfter: retryDelay(s.now, st.CancelRequested.Time)}, nil
	case res.Err != nil:
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
			"the agent did not confirm the cancel within %s: %s", r.Options.CancelTimeout, truncate(res.Err.Error(), 800))
		step.Outcome.Message += "; the agent did not confirm the cancel"
	}
	if t := res.Task; t != nil {
		st.RemoteState = string(t.State)
		// The task's last report: what it is charged when it finished
		// before the cancel arrived.
		r.recordUsage(s, t, true)
		if t.State.Terminal() && t.State != a2a.StateCanceled {
			// It finished before the cancel arrived: report what it did.
			step = delegation.Follow(s.observation(r.Options), t)
			st.Result = boundedResult(t, r.Options.ResultTextLimit)
		}
	}
	r.setPhase(s, step)
	return ctrl.Result{}, nil
}

// lookUpError is the error of a cancel's look-up of the send's task, if any.
func lookUpError(res agentio.Answer) error {
	if res.LookUp == nil {
		return nil
	}
	return res.LookUp.Err
}

// cancelUnconfirmed: the send may have reached an agent that cannot list
// tasks; nothing could be cancelled.
func cancelUnconfirmed(res agentio.Answer) bool {
	return res.LookUp != nil && res.LookUp.Err == nil && !res.LookUp.Listed
}
