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
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// cancelTask sends CancelTask (when a task exists) and settles. A failing
// cancel is retried until --cancel-timeout, then the Delegation settles with
// a Warning; the lease bounds the orphan.
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
	if st.CancelRequested == nil && delegation.Started(st) {
		if strings.HasPrefix(step.Outcome.Reason, "Parent") {
			cascadeCancels.WithLabelValues(step.Outcome.Reason).Inc()
		}
		now := metav1.NewTime(s.now)
		st.CancelRequested = &now
	}
	if st.TaskID == "" && st.SendStarted != nil {
		// A send may be in flight: find its task before cancelling, and
		// never record Canceled on a look-up that failed.
		unconfirmed, err := r.findForCancel(ctx, s)
		switch {
		case err != nil && s.now.Sub(st.CancelRequested.Time) < r.Options.CancelTimeout:
			logf.FromContext(ctx).Info("cannot look up the task to cancel; retrying", "error", err.Error())
			return ctrl.Result{RequeueAfter: retryDelay(s.now, st.CancelRequested.Time)}, nil
		case err != nil:
			r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
				"the task of the send could not be looked up within %s: %s", r.Options.CancelTimeout, truncate(err.Error(), 800))
			step.Outcome.Message += "; the task of the send could not be looked up to cancel it"
		case unconfirmed:
			r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
				"the send may have reached the agent, which cannot list tasks: nothing could be cancelled; a lease, if any, bounds the task")
			step.Outcome.Message += "; the send may have reached the agent, which cannot list tasks"
		}
	}
	if st.TaskID == "" {
		r.setPhase(s, step)
		return ctrl.Result{}, nil
	}
	t, err := r.sendCancel(ctx, s)
	if err != nil {
		if s.now.Sub(st.CancelRequested.Time) < r.Options.CancelTimeout {
			logf.FromContext(ctx).Info("cancel failed; retrying", "error", err.Error())
			return ctrl.Result{RequeueAfter: retryDelay(s.now, st.CancelRequested.Time)}, nil
		}
		r.Recorder.Eventf(s.d, nil, "Warning", "CancelUnconfirmed", "Cancel",
			"the agent did not confirm the cancel within %s: %s", r.Options.CancelTimeout, truncate(err.Error(), 800))
		step.Outcome.Message += "; the agent did not confirm the cancel"
	}
	if t != nil {
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

// findForCancel looks up the task of a send whose answer was not recorded,
// so a cancel reaches it; it sets status.taskID when found. unconfirmed is
// true when the send may have reached an agent that cannot list tasks.
func (r *DelegationReconciler) findForCancel(ctx context.Context, s *scope) (unconfirmed bool, err error) {
	st := &s.d.Status
	if st.SendResult == v1alpha1.SendNotSent {
		return false, nil // nothing reached the agent
	}
	if s.agent == nil {
		return false, errors.New("the Agent no longer exists")
	}
	if !agentCanList(s.agent) {
		return true, nil
	}
	c, err := r.cancelClient(ctx, s)
	if err != nil {
		return false, err
	}
	t, listed, err := r.lookUpSent(ctx, s, c)
	if err != nil {
		return false, err
	}
	if t != nil {
		st.TaskID = t.ID
		if st.ContextID == "" {
			st.ContextID = t.ContextID
		}
	}
	return !listed, nil
}

func (r *DelegationReconciler) sendCancel(ctx context.Context, s *scope) (*a2a.Task, error) {
	if s.agent == nil {
		return nil, errors.New("the Agent no longer exists")
	}
	c, err := r.cancelClient(ctx, s)
	if err != nil {
		return nil, err
	}
	t, err := c.Cancel(ctx, s.d.Status.TaskID)
	if a2a.IsTaskNotFound(err) {
		return nil, nil // nothing left to cancel
	}
	if errors.Is(err, a2a.ErrAnswerTooLarge) {
		// The agent answered the cancel; only its answer was too large to
		// read. Read the task back for its final state, if it can be read.
		if t, gerr := c.Get(ctx, s.d.Status.TaskID, false); gerr == nil {
			return t, nil
		}
		return nil, nil
	}
	return t, err
}

// cancelClient is the client for cancels: it survives the Agent's Secrets.
func (r *DelegationReconciler) cancelClient(ctx context.Context, s *scope) (a2a.Client, error) {
	if s.agent == nil {
		return nil, errors.New("the Agent no longer exists")
	}
	return r.Connector.CancelClient(ctx, s.agent, s.d.Spec.Tenant)
}
