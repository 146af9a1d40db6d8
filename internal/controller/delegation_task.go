/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// reconcileTask runs the step the state machine chose.
func (r *DelegationReconciler) reconcileTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.leaseRenewed = r.Scheduler.Renewed(client.ObjectKeyFromObject(s.d))
	o := s.observation()
	o.SendOnItsWay = s.d.Status.TaskID == "" && r.Calls.Has(callKey(s.d, agentio.KindStart))
	res, err := r.runStep(ctx, s, delegation.Gate(o))
	if err == nil && delegation.Settled(s.d.Status.Phase) && !delegation.Settled(s.base.Status.Phase) {
		// Its own status write does not wake it: time its deletion now.
		if del, after := delegation.ExpiryAfterFinish(&s.d.Spec, &s.d.Status, s.now); del || after > 0 {
			res.RequeueAfter = max(after, time.Millisecond)
		}
	}
	if err == nil && delegation.Settled(s.d.Status.Phase) {
		// Charged before the settled status is written; a crash in between
		// finds the entry gone and charges nothing twice.
		err = r.chargeParent(ctx, s)
		if err == nil {
			err = r.settleQuotaMeters(ctx, s)
		}
		if err == nil && r.afterCharge != nil {
			r.afterCharge(ctx)
		}
	}
	return res, err
}

// runStep runs the step the state machine chose. A step that needs no
// answer from an agent (wait, settle, detach, a group's phase) is recorded
// here; the others record what their answers come to.
func (r *DelegationReconciler) runStep(ctx context.Context, s *scope, step delegation.Step) (ctrl.Result, error) {
	switch step.Kind {
	case delegation.StepNone:
		return r.expireFinished(ctx, s)
	case delegation.StepWait, delegation.StepSettle, delegation.StepDetach, delegation.StepGroup, delegation.StepBackoff:
		rec, running, retryAfter, err := r.stepRecord(ctx, s, step)
		if err != nil {
			return ctrl.Result{}, err
		}
		r.setPhase(s, rec)
		if retryAfter > 0 {
			return ctrl.Result{RequeueAfter: retryAfter}, nil // a root group waiting for a meter's window
		}
		if step.Kind == delegation.StepBackoff {
			// The next attempt is due at step.At; the tree's end or a
			// cancel wakes it sooner (and Gate stops it).
			return retryLater(max(step.At.Sub(s.now), time.Millisecond)), nil
		}
		if running {
			// Children wake a group; only its deadline (fixed when it
			// started, above) needs a timer.
			return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation())}, nil
		}
		return ctrl.Result{}, nil
	case delegation.StepCancel:
		return r.cancelTask(ctx, s, step)
	case delegation.StepStart:
		return r.startTask(ctx, s)
	case delegation.StepFollow:
		return r.followTask(ctx, s)
	}
	return ctrl.Result{}, fmt.Errorf("unknown step %q", step.Kind)
}

// stepRecord is what a step without a call shows; running: a group that
// goes on. A group holds its budget for its children: it reserves from its
// own parent before it starts (and shows why it waits), or, as a root, in
// the meter windows of its namespace's quotas; then it takes its phase from
// the children.
func (r *DelegationReconciler) stepRecord(ctx context.Context, s *scope, step delegation.Step) (
	rec delegation.Record, running bool, retryAfter time.Duration, err error) {
	if step.Kind != delegation.StepGroup {
		return step.Record(), false, 0, nil
	}
	if s.d.Status.StartTime == nil {
		if wait, err := r.admitLimits(ctx, s.d); wait != nil || err != nil {
			return deref(wait), false, 0, err
		}
		if wait, err := r.reserve(ctx, s); wait != nil || err != nil {
			return deref(wait), false, 0, err
		}
	}
	if s.d.Status.StartTime == nil && !delegation.Settled(step.Phase) {
		if wait, after, err := r.chargeQuotaMeters(ctx, s); wait != nil || err != nil {
			return deref(wait), false, after, err
		}
	}
	return step.Record(), !delegation.Settled(step.Phase), 0, nil
}

func deref(rec *delegation.Record) delegation.Record {
	if rec == nil {
		return delegation.Record{}
	}
	return *rec
}

// reserve takes this Delegation's grant from its parent; when the parent is
// short it waits Pending, reason BudgetExhausted (the record returned), and
// is never sent.
func (r *DelegationReconciler) reserve(ctx context.Context, s *scope) (wait *delegation.Record, err error) {
	shortage, err := r.reserveFromParent(ctx, s)
	if err != nil || shortage == nil {
		return nil, err
	}
	rec := delegation.Progress(v1alpha1.PhasePending, delegation.ReasonBudgetExhausted, shortage.Error())
	return &rec, nil
}

// startTask adopts spec.taskID, adopts a send that was in flight when the
// operator stopped, or sends the first message. The call runs on the
// Agent's pool; the pass that finds its result applies it (applySend).
// Until then it waits: for room at the Agent (a call on its way, the
// Agent's cap on tasks) or for budget, shown as the record it waits with.
func (r *DelegationReconciler) startTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	if step, ok := r.cascadeStep(s.d); ok {
		// An ancestor ended; this cache may not show it yet. Nothing is
		// sent after the cascade (it fenced the send at the Dispatcher).
		return r.cancelTask(ctx, s, step)
	}
	if st := &s.d.Status; st.Attempt > 1 && st.CancelRequested == nil {
		// A cancel while this attempt asked none is of an ended attempt's
		// task (asked again by a pass on a cache that did not show the end
		// yet): it says nothing of this attempt, but fences its send for as
		// long as it is on its way or its answer is kept. Wait for it (its
		// answer wakes this Delegation), then drop the answer.
		cancel := callKey(s.d, agentio.KindCancel)
		if r.Calls.State(cancel).Pending {
			s.skipStatus = true
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		r.Calls.Take(cancel)
	}
	key := callKey(s.d, agentio.KindStart)
	if res, ok := r.Calls.Peek(key); ok && delegation.AnswerAheadOfCache(&s.d.Spec, &s.d.Status, res.LookUp != nil, res.Finished, s.now) {
		s.skipStatus = true
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	if res, ok := r.take(s, key); ok && !ofEarlierAttempt(s.d, res) {
		// (An earlier attempt's answer, a look-up a pass on a cache behind
		// the attempt's end made, is dropped: this attempt is sent anew.)
		return r.applySend(ctx, s, res)
	}
	next, err := r.beforeStart(ctx, s, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	if next.record != nil {
		r.setPhase(s, *next.record)
	}
	if next.resend {
		return r.sendAgain(ctx, s)
	}
	return next.res, nil
}

// beforeStart waits for room and budget, then makes the call that starts
// the task.
func (r *DelegationReconciler) beforeStart(ctx context.Context, s *scope, key agentio.Key) (sendNext, error) {
	st, spec := &s.d.Status, &s.d.Spec
	if cs := r.Calls.State(key); cs.Pending {
		res, wait := r.waitForCall(s, cs, v1alpha1.PhasePending)
		return sendNext{record: wait, res: res}, nil
	}
	if spec.TaskID == "" && st.SendStarted == nil {
		// A pass that lets it through but ends without recording its send
		// (it waits for its Agent or its budget, or the marker's write
		// failed) gives its places back: only a send holds one.
		defer r.releaseUnsent(ctx, s)
		// Static limits, then approval: a Delegation waiting for either
		// holds no place under the quota.
		if wait, err := r.admitLimits(ctx, s.d); wait != nil || err != nil {
			return sendNext{record: wait}, err
		}
		if wait, err := r.admitApproval(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait}, err
		}
		if wait, after, err := r.admitQuotaMeters(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait, res: ctrl.Result{RequeueAfter: after}}, err
		}
		if wait, err := r.admitQuota(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait}, err
		}
		if wait, err := r.admit(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait}, err
		}
		// Waiting for budget is not a start: the start time, and the
		// deadline counted from it, are fixed once the reservation is held.
		if wait, err := r.reserve(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait}, err
		}
		if wait, after, err := r.chargeQuotaMeters(ctx, s); wait != nil || err != nil {
			return sendNext{record: wait, res: ctrl.Result{RequeueAfter: after}}, err
		}
	}
	if st.StartTime == nil && spec.TaskID != "" {
		r.markStarted(s)
	}
	if spec.TaskID != "" {
		if err := r.ensureFinalizer(ctx, s); err != nil {
			return sendNext{}, err
		}
		r.dispatchAdopt(s)
		return sendNext{}, nil
	}
	return r.sendTask(ctx, s)
}

// followTask applies a read of the task when one came back (from the
// scheduler, or asked for by an earlier pass) and leaves the task to the
// scheduler otherwise: following costs no reconcile while nothing changes.
func (r *DelegationReconciler) followTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	if step, ok := r.cascadeStep(s.d); ok {
		// An ancestor's cascade cancelled the task; this cache may not show
		// the ancestor's end yet.
		return r.cancelTask(ctx, s, step)
	}
	if res, ok := r.take(s, callKey(s.d, agentio.KindReply)); ok {
		return r.applyReply(ctx, s, res)
	}
	if cs := r.Calls.State(callKey(s.d, agentio.KindReply)); cs.Pending {
		return ctrl.Result{}, nil
	}
	if res, ok := r.take(s, callKey(s.d, agentio.KindGet)); ok && !ofEarlierAttempt(s.d, res) {
		if res.Err != nil {
			s.seen = agentio.Fingerprint(nil, res.Err)
		}
		return r.applyRead(ctx, s, res.Task, res.Err)
	}
	if s.agent == nil {
		return r.applyRead(ctx, s, nil, fmt.Errorf("agent %q not found", s.d.Spec.AgentRef.Name))
	}
	if s.changed {
		// Someone changed the object (a reply appended, a restart): read
		// the task now instead of at the next renewal.
		r.dispatchGet(s)
	}
	return ctrl.Result{RequeueAfter: delegation.NextDeadline(s.observation())}, nil
}

// ofEarlierAttempt: an answer about a task the Delegation let go of (an
// earlier attempt's: a read made while it ended, or a look-up made by a
// pass on a cache behind its end), which says nothing of this attempt.
func ofEarlierAttempt(d *v1alpha1.Delegation, res agentio.Answer) bool {
	id := res.TaskID
	if res.Task != nil && res.Task.ID != "" {
		id = res.Task.ID
	}
	if id == "" || id == d.Status.TaskID {
		return false
	}
	return slices.ContainsFunc(d.Status.Attempts, func(a v1alpha1.Attempt) bool { return a.TaskID == id })
}

// expireFinished deletes a settled Delegation after ttlSecondsAfterFinished.
func (r *DelegationReconciler) expireFinished(ctx context.Context, s *scope) (ctrl.Result, error) {
	del, after := delegation.ExpiryAfterFinish(&s.d.Spec, &s.d.Status, s.now)
	if del {
		s.done = true
		return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, s.d, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	}
	return ctrl.Result{RequeueAfter: after}, nil
}
