/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// cancelTask sends CancelTask (when a task exists) and settles. A failing
// cancel is retried until --cancel-timeout, then the Delegation settles with
// a Warning; the lease bounds the orphan.
func (r *DelegationReconciler) cancelTask(ctx context.Context, s *scope, step delegation.Step) (ctrl.Result, error) {
	st := &s.d.Status
	if st.TaskID == "" && st.SendStarted != nil && s.agent != nil {
		if c, err := r.client(ctx, s); err == nil {
			if t, _ := r.findSent(ctx, s, c, delegation.ContextID(&s.d.Spec, string(s.d.UID))); t != nil {
				st.TaskID, st.ContextID = t.ID, t.ContextID
			}
		}
	}
	if st.TaskID == "" {
		r.setPhase(s, step)
		return ctrl.Result{}, nil
	}
	if st.CancelRequested == nil {
		if strings.HasPrefix(step.Outcome.Reason, "Parent") {
			cascadeCancels.WithLabelValues(step.Outcome.Reason).Inc()
		}
		now := metav1.NewTime(s.now)
		st.CancelRequested = &now
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
		recordUsage(st, t)
		if t.State.Terminal() && t.State != a2a.StateCanceled {
			// It finished before the cancel arrived: report what it did.
			step = delegation.Follow(s.observation(r.Options), t)
			st.Result = boundedResult(t, r.Options.ResultTextLimit)
		}
	}
	r.setPhase(s, step)
	return ctrl.Result{}, nil
}

func (r *DelegationReconciler) sendCancel(ctx context.Context, s *scope) (*a2a.Task, error) {
	if s.agent == nil {
		return nil, errors.New("the Agent no longer exists")
	}
	c, err := r.client(ctx, s)
	if err != nil {
		return nil, err
	}
	t, err := c.Cancel(ctx, s.d.Status.TaskID)
	if a2a.IsTaskNotFound(err) {
		return nil, nil // nothing left to cancel
	}
	return t, err
}
