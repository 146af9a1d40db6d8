/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// reconcileTask runs the step the state machine chose.
func (r *DelegationReconciler) reconcileTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	res, err := r.runStep(ctx, s, delegation.Gate(s.observation(r.Options)))
	if err == nil && delegation.Settled(s.d.Status.Phase) {
		// Charged before the settled status is written; a crash in between
		// finds the entry gone and charges nothing twice.
		err = r.chargeParent(ctx, s)
		if err == nil && r.afterCharge != nil {
			r.afterCharge(ctx)
		}
	}
	return res, err
}

func (r *DelegationReconciler) runStep(ctx context.Context, s *scope, step delegation.Step) (ctrl.Result, error) {
	switch step.Kind {
	case delegation.StepNone:
		return r.expireFinished(ctx, s)
	case delegation.StepWait, delegation.StepSettle, delegation.StepDetach:
		r.setPhase(s, step)
		return ctrl.Result{}, nil
	case delegation.StepGroup:
		return r.runGroup(ctx, s, step)
	case delegation.StepCancel:
		return r.cancelTask(ctx, s, step)
	case delegation.StepStart:
		return r.startTask(ctx, s)
	case delegation.StepFollow:
		return r.followTask(ctx, s)
	}
	return ctrl.Result{}, fmt.Errorf("unknown step %q", step.Kind)
}

// runGroup holds its budget for its children: it reserves from its own
// parent before it starts, then takes its phase from the children.
func (r *DelegationReconciler) runGroup(ctx context.Context, s *scope, step delegation.Step) (ctrl.Result, error) {
	if s.d.Status.StartTime == nil {
		if waiting, err := r.reserve(ctx, s); waiting || err != nil {
			return ctrl.Result{}, err
		}
	}
	r.setPhase(s, step)
	if delegation.Settled(step.Phase) {
		return ctrl.Result{}, nil
	}
	// Children wake a group; only its deadline needs a timer.
	return ctrl.Result{RequeueAfter: delegation.NextCheck(s.observation(r.Options), 0)}, nil
}

// reserve takes this Delegation's grant from its parent; when the parent is
// short it stays Pending with reason BudgetExhausted and is never sent.
func (r *DelegationReconciler) reserve(ctx context.Context, s *scope) (waiting bool, err error) {
	shortage, err := r.reserveFromParent(ctx, s)
	if err != nil {
		return true, err
	}
	if shortage != nil {
		r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonBudgetExhausted, shortage.Error()))
		return true, nil
	}
	return false, nil
}

// setPhase records a decision; the start time and deadline are fixed when the
// Delegation first leaves Pending, the completion time when it settles.
func (r *DelegationReconciler) setPhase(s *scope, step delegation.Step) {
	st := &s.d.Status
	if step.Phase != v1alpha1.PhasePending && st.StartTime == nil {
		r.markStarted(s)
	}
	st.Phase = step.Phase
	out := step.Outcome
	out.Message = truncate(out.Message, maxOutcomeMessage) // agents write what they like
	st.Outcome = &out
	if delegation.Settled(step.Phase) && st.CompletionTime == nil {
		now := metav1.NewTime(s.now)
		st.CompletionTime = &now
	}
}

func (r *DelegationReconciler) markStarted(s *scope) {
	st := &s.d.Status
	now := metav1.NewTime(s.now)
	st.StartTime = &now
	s.grantOwnBudget()
	var parentDeadline time.Time
	if s.parent != nil {
		parentDeadline = s.parent.Deadline
	}
	if d := delegation.Deadline(&s.d.Spec, parentDeadline, s.now); !d.IsZero() {
		dl := metav1.NewTime(d)
		st.Deadline = &dl
	}
}

// client builds the A2A client for this Delegation's Agent and tenant.
func (r *DelegationReconciler) client(ctx context.Context, s *scope) (a2a.Client, error) {
	if s.agent == nil {
		return nil, fmt.Errorf("agent %q not found", s.d.Spec.AgentRef.Name)
	}
	return r.Connector.Client(ctx, s.agent, s.d.Spec.Tenant)
}

// startTask adopts spec.taskID, adopts a send that was in flight when the
// operator stopped, or sends the first message.
func (r *DelegationReconciler) startTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	st, spec := &s.d.Status, &s.d.Spec
	if fresh, err := r.isFresh(ctx, s.d); err != nil || !fresh {
		// The cache lags behind a write of ours; acting on it could send twice.
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, err
	}
	c, err := r.client(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if spec.TaskID == "" && st.SendStarted == nil {
		// Waiting for budget is not a start: the start time, and the
		// deadline counted from it, are fixed once the reservation is held.
		if waiting, err := r.reserve(ctx, s); waiting || err != nil {
			return ctrl.Result{}, err
		}
	}
	if st.StartTime == nil {
		r.markStarted(s)
	}
	if spec.TaskID != "" {
		t, err := c.Get(ctx, spec.TaskID, spec.Lease != nil)
		if err != nil {
			return r.remoteError(ctx, s, err)
		}
		st.TaskID, st.ContextID = t.ID, t.ContextID
		r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, "adopted task "+t.ID))
		return r.applyTask(ctx, s, c, t)
	}
	contextID := delegation.ContextID(spec, string(s.d.UID))
	if st.SendStarted != nil {
		t, err := r.findSent(ctx, s, c, contextID)
		if err != nil {
			// Sending again now could start the task twice: look again later.
			log.Info("cannot look up the task of an earlier send; will retry", "error", err.Error())
			return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
		}
		if t != nil {
			log.Info("adopted a task sent before a restart", "task", t.ID)
			sendAdoptions.Inc()
			st.TaskID, st.ContextID = t.ID, t.ContextID
			r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonAdopted, "adopted task "+t.ID+" sent before a restart"))
			// ListTasks answers without artifacts: read the task in full, so
			// one that already finished keeps its result.
			if t, err = c.Get(ctx, t.ID, spec.Lease != nil); err != nil {
				return r.remoteError(ctx, s, err)
			}
			return r.applyTask(ctx, s, c, t)
		}
	} else {
		// Record the send before making it, so a crash in between is
		// followed by a look-up instead of a second send.
		now := metav1.NewTime(s.now)
		st.SendStarted = &now
		r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonSending, "sending to agent "+spec.AgentRef.Name))
		if err := r.persistStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	log.V(1).Info("sending", "rv", s.d.ResourceVersion, "sendStarted", st.SendStarted)
	t, err := c.Send(ctx, r.sendRequest(s, contextID))
	if err != nil {
		if a2a.IsRefused(err) {
			r.setPhase(s, delegation.SendRefused(a2a.FailureClassOf(err), err.Error()))
			return ctrl.Result{}, nil
		}
		// The agent may have the task: keep the marker, look it up next time.
		log.Info("send failed; will look the task up and retry", "error", err.Error())
		return ctrl.Result{RequeueAfter: retryDelay(s.now, st.SendStarted.Time)}, nil
	}
	st.TaskID, st.ContextID = t.ID, t.ContextID
	if st.ContextID == "" {
		st.ContextID = contextID
	}
	r.recordLease(s, t)
	r.setPhase(s, delegation.Progress(v1alpha1.PhaseRunning, delegation.ReasonSent, "sent as task "+t.ID))
	return r.applyTask(ctx, s, c, t)
}

// isFresh reports whether the cached copy is the API server's latest.
func (r *DelegationReconciler) isFresh(ctx context.Context, d *v1alpha1.Delegation) (bool, error) {
	var latest v1alpha1.Delegation
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), &latest); err != nil {
		return false, err
	}
	return latest.ResourceVersion == d.ResourceVersion, nil
}

// findSent looks for a task sent by an earlier pass whose answer was lost.
// It returns nil when the agent has none, or cannot list tasks at all (0.3):
// then the send is made again, the derived message id lets the agent
// recognise it, and the lease bounds an orphan. An error means the look-up
// may work later.
func (r *DelegationReconciler) findSent(ctx context.Context, s *scope, c a2a.Client, contextID string) (*a2a.Task, error) {
	tasks, err := c.ListByContext(ctx, contextID)
	if errors.Is(err, a2a.ErrUnsupported) {
		return nil, nil
	}
	if err != nil || len(tasks) == 0 {
		return nil, err
	}
	return delegation.OwnTask(tasks, string(s.d.UID), s.d.Spec.Message != nil && s.d.Spec.Message.ContextID != "")
}

func (r *DelegationReconciler) sendRequest(s *scope, contextID string) a2a.SendRequest {
	d := s.d
	req := a2a.SendRequest{
		MessageID: delegation.MessageID(string(d.UID), -1),
		ContextID: contextID,
		Skill:     d.Spec.Skill,
		Metadata:  map[string]any{a2a.DelegationMetadataKey: d.Namespace + "/" + d.Name},
	}
	if m := d.Spec.Message; m != nil {
		req.Text = m.Text
		for k, v := range m.Metadata {
			req.Metadata[k] = v
		}
		req.Parts = wireParts(m.Parts)
	}
	if d.Spec.Lease != nil {
		req.Lease = &a2a.LeaseRequest{TTL: d.Spec.Lease.TTL.Duration}
	}
	if r.Push != nil && s.agent != nil && s.agent.Status.PushNotifications {
		req.Push = r.Push.Target(d)
	}
	if b := d.Status.Budget; (b != nil && b.Granted != nil) || d.Status.Deadline != nil {
		req.Budget = &a2a.BudgetGrant{}
		if b != nil {
			req.Budget.Meters = b.Granted
		}
		if d.Status.Deadline != nil {
			req.Budget.Deadline = d.Status.Deadline.Time
		}
	}
	return req
}

// followTask reads the task back (renewing its lease) and applies it.
func (r *DelegationReconciler) followTask(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, err := r.client(ctx, s)
	if err != nil {
		return r.remoteError(ctx, s, err)
	}
	t, err := c.Get(ctx, s.d.Status.TaskID, s.d.Spec.Lease != nil)
	if err != nil {
		return r.remoteError(ctx, s, err)
	}
	return r.applyTask(ctx, s, c, t)
}

// remoteError turns a failed call into a decision: a lost task fails; any
// other error is shown in the outcome and retried at the task's own cadence
// (poll, lease renewal, deadline), not with the controller's growing backoff
// that would let a lease lapse or a deadline slip.
func (r *DelegationReconciler) remoteError(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	if a2a.IsTaskNotFound(err) {
		r.setPhase(s, delegation.Lost())
		return ctrl.Result{}, nil
	}
	logf.FromContext(ctx).Info("agent call failed; will retry", "error", err.Error())
	if o := s.d.Status.Outcome; o != nil {
		o.Message = truncate("the agent did not answer: "+err.Error(), maxOutcomeMessage)
	}
	return ctrl.Result{RequeueAfter: delegation.NextCheck(s.observation(r.Options), pollInterval(s.agent))}, nil
}

// applyTask records what the agent reported and does what Follow decides.
func (r *DelegationReconciler) applyTask(ctx context.Context, s *scope, c a2a.Client, t *a2a.Task) (ctrl.Result, error) {
	st := &s.d.Status
	st.RemoteState = string(t.State)
	r.recordLease(s, t)
	recordUsage(st, t)
	step := delegation.Follow(s.observation(r.Options), t)
	switch step.Kind {
	case delegation.StepReply:
		// Claim the reply before sending it (a stale pass fails the claim),
		// so each reply reaches the agent at most once; a transport error
		// gives the claim back and the same message id is sent again.
		i := int(st.RepliesSent)
		st.RepliesSent++
		if err := r.persistStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		_, err := c.Send(ctx, replyRequest(s.d, i))
		if err != nil {
			// Agents may refuse a reply for a moment after asking for input
			// (the task is not yet free): retry rather than fail the task.
			st.RepliesSent--
			return r.remoteError(ctx, s, err)
		}
		st.RemoteState = string(a2a.StateWorking)
		r.setPhase(s, step)
	case delegation.StepSettle:
		st.Result = boundedResult(t, r.Options.ResultTextLimit)
		r.setPhase(s, step)
		return ctrl.Result{}, nil
	default:
		r.setPhase(s, step)
	}
	return ctrl.Result{RequeueAfter: delegation.NextCheck(s.observation(r.Options), pollInterval(s.agent))}, nil
}

// recordUsage keeps the agent's latest budget report: a settled task's
// parent is charged what it holds.
func recordUsage(st *v1alpha1.DelegationStatus, t *a2a.Task) {
	if t.Usage == nil || t.Usage.Spent == nil {
		return
	}
	if st.Budget == nil {
		st.Budget = &v1alpha1.BudgetStatus{}
	}
	st.Budget.Reported = t.Usage.Spent
	delegation.Recompute(st.Budget)
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

func pollInterval(agent *v1alpha1.Agent) time.Duration {
	if agent != nil && agent.Spec.PollInterval != nil {
		return agent.Spec.PollInterval.Duration
	}
	return 5 * time.Second
}

// retryDelay backs off with the time a retry has been going on: 1s, then a
// quarter of the elapsed time, at most 15s.
func retryDelay(now, since time.Time) time.Duration {
	d := now.Sub(since) / 4
	return min(max(d, time.Second), 15*time.Second)
}
