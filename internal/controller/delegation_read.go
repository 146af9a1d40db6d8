/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// applyRead records what a read of the task came to and does what the
// state machine decides (delegation.AfterRead, or AfterReadError for a read
// that failed): follow on, settle, or send the reply that waits.
func (r *DelegationReconciler) applyRead(ctx context.Context, s *scope, t *a2a.Task, readErr error) (ctrl.Result, error) {
	st := &s.d.Status
	read, shown := delegation.Read{}, true
	if readErr != nil {
		read, shown = delegation.AfterReadError(st, readErr)
		if read.Next != delegation.ReadSettle {
			logf.FromContext(ctx).Info("agent call failed; will retry", "error", readErr.Error())
		}
	} else {
		s.seen = agentio.Fingerprint(t, nil)
		read = delegation.AfterRead(s.observation(), t)
		r.recordRead(s, t, read.Next == delegation.ReadSettle)
		delegation.RecordLease(&s.d.Spec, st, t.LeaseExpiresAt, s.agent == nil || s.agent.Status.Extensions.Lease)
		if st.ReplyInFlight && r.checkReply(ctx, s, t) {
			return r.sendReply(ctx, s)
		}
	}
	if read.Next == delegation.ReadReply {
		// Claim the reply before sending it (a stale pass fails the claim),
		// so each reply reaches the agent at most once.
		delegation.ChangeReply(st, delegation.ReplyClaimed)
		if err := r.persistStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		return r.sendReply(ctx, s)
	}
	again, wait := false, time.Duration(0)
	if read.Next == delegation.ReadSettle {
		// The attempt ended: under a retry policy the next one may follow.
		read.Record, again, wait = r.endAttempt(s, read.Record)
	}
	if shown {
		r.setPhase(s, read.Record)
	}
	switch {
	case again:
		return retryLater(wait), nil
	case read.Next == delegation.ReadSettle:
		return ctrl.Result{}, nil
	}
	next := delegation.NextDeadline(s.observation())
	if lapse := delegation.UntilLapse(s.observation()); readErr != nil && lapse > 0 && (next <= 0 || lapse < next) {
		// The agent did not answer: look again when the lease lapses.
		next = lapse
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// recordRead records what a task read back reports: its state, its spend
// and, once it ended, its result (the one place status.remoteState and
// status.result are written from a task).
func (r *DelegationReconciler) recordRead(s *scope, t *a2a.Task, ended bool) {
	s.d.Status.RemoteState = string(t.State)
	r.recordUsage(s, t, ended)
	if ended {
		s.d.Status.Result = boundedResult(t, r.Options.ResultTextLimit)
	}
}

// recordUsage keeps the agent's latest budget report, clamped to the grant:
// a settled task's parent is charged what it holds. A report that had to be
// clamped is told once per new value (and when the task settles) as a
// Warning event, so an agent reporting nonsense is visible, not trusted.
func (r *DelegationReconciler) recordUsage(s *scope, t *a2a.Task, settling bool) {
	st := &s.d.Status
	if t.Usage == nil || t.Usage.Spent == nil {
		return
	}
	if st.Budget == nil {
		st.Budget = &v1alpha1.BudgetStatus{}
	}
	kept, clamped := delegation.ClampReport(delegation.AttemptGrant(st.Budget), t.Usage.Spent)
	changed := !equality.Semantic.DeepEqual(st.Budget.Reported, kept)
	st.Budget.Reported = kept
	delegation.Recompute(st.Budget)
	if clamped != "" && (changed || settling) {
		r.Recorder.Eventf(s.d, nil, "Warning", "SpendClamped", "ReportSpend",
			"the agent's spend report was clamped to the grant: %s", truncate(clamped, 900))
	}
}
