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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// AgentConnector is the agent I/O layer's client builder, under the name
// the controller used before the layer had its own package.
type AgentConnector = agentio.Connector

// AgentCredentialsLabel marks a Secret Agents of its namespace may use.
const AgentCredentialsLabel = agentio.AgentCredentialsLabel

// ErrSecretNotMarked matches (errors.Is) a Secret without the consent label.
var ErrSecretNotMarked = agentio.ErrSecretNotMarked

func checkSecretConsent(s *corev1.Secret) error { return agentio.CheckSecretConsent(s) }

// Dispatching a call and applying its result are kept apart: the functions
// here only build and submit calls (they never touch status); the result is
// taken and applied by the next reconcile, in delegation_task.go and
// delegation_cancel.go.

// busyAfter is how long a call may wait for room in its Agent's pool before
// the Delegation says so (reason AgentBusy).
const busyAfter = 2 * time.Second

// sendOutcome is the result of a KindSend call: a task that was sent,
// adopted or found by a look-up, or what the look-up learnt.
type sendOutcome struct {
	task *a2a.Task
	// lookedUp: the call looked an earlier send up and sent nothing.
	lookedUp bool
	// listed: the agent could list tasks for the look-up.
	listed bool
	// lookupErr: the look-up failed; it may work later.
	lookupErr error
	// sent are the terms the request carried; the status record is taken
	// from them, not from the object at the time the answer is applied
	// (its send marker may have been removed, spec.timeout changed).
	sent sentTerms
}

// sentTerms are what a send was made under.
type sentTerms struct {
	// marker is the send marker the request was made after.
	marker *metav1.Time
	// deadline is the deadline the agent was given.
	deadline *metav1.Time
}

// cancelOutcome is the result of a KindCancel call.
type cancelOutcome struct {
	task *a2a.Task
	// taskID is the task cancelled, found by a look-up when status had none.
	taskID string
	// lookupErr: the task of a send could not be looked up; nothing was
	// cancelled.
	lookupErr error
	// unconfirmed: the send may have reached an agent that cannot list
	// tasks; nothing could be cancelled.
	unconfirmed bool
}

func callKey(d *v1alpha1.Delegation, kind agentio.Kind) agentio.Key {
	return agentio.Key{Delegation: client.ObjectKeyFromObject(d), Kind: kind}
}

// newCall fills in the Agent's pool settings.
func (r *DelegationReconciler) newCall(d *v1alpha1.Delegation, agent *v1alpha1.Agent, kind agentio.Kind,
	do func(context.Context, a2a.Client) (any, error)) agentio.Call {
	return r.newCallWith(d, agent, kind, false, do)
}

// newCallWith: with forCancel the client survives the Agent's Secrets.
func (r *DelegationReconciler) newCallWith(d *v1alpha1.Delegation, agent *v1alpha1.Agent, kind agentio.Kind, forCancel bool,
	do func(context.Context, a2a.Client) (any, error)) agentio.Call {
	c := agentio.Call{Key: callKey(d, kind), Agent: types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}}
	if agent.Spec.MaxConcurrentCalls != nil {
		c.PoolSize = int(*agent.Spec.MaxConcurrentCalls)
	}
	if agent.Spec.RequestTimeout != nil {
		c.Timeout = agent.Spec.RequestTimeout.Duration
	}
	agent, tenant, connector := r.agentCopy(agent), d.Spec.Tenant, r.Connector
	c.Do = func(ctx context.Context) (any, error) {
		build := connector.Client
		if forCancel {
			build = connector.CancelClient
		}
		cl, release, err := build(ctx, agent, tenant)
		if err != nil {
			return nil, a2a.NotMade(err)
		}
		defer release()
		return do(ctx, cl)
	}
	return c
}

// agentCopy returns a copy of agent that calls share and nobody changes:
// 10,000 followed tasks of one Agent hold one copy, not 10,000.
func (r *DelegationReconciler) agentCopy(agent *v1alpha1.Agent) *v1alpha1.Agent {
	key := client.ObjectKeyFromObject(agent)
	if v, ok := r.agentCopies.Load(key); ok {
		if c := v.(*v1alpha1.Agent); c.UID == agent.UID && c.ResourceVersion == agent.ResourceVersion {
			return c
		}
	}
	c := agent.DeepCopy()
	r.agentCopies.Store(key, c)
	return c
}

// dispatchSend submits the first message, or with lookUp looks an earlier
// send up (and reads a task it finds in full); a look-up never sends: what
// follows is decided when its answer is applied.
func (r *DelegationReconciler) dispatchSend(s *scope, lookUp bool) {
	req := r.sendRequest(s, delegation.ContextID(&s.d.Spec, string(s.d.UID)))
	uid, ownContext, lease := string(s.d.UID), s.d.Spec.Message != nil && s.d.Spec.Message.ContextID != "", s.d.Spec.Lease != nil
	canList := agentCanList(s.agent)
	sent := sentTerms{marker: s.d.Status.SendStarted.DeepCopy(), deadline: s.d.Status.Deadline.DeepCopy()}
	c := r.newCall(s.d, s.agent, agentio.KindSend, func(ctx context.Context, c a2a.Client) (any, error) {
		if lookUp {
			t, listed, err := lookUpSent(ctx, c, canList, req.ContextID, uid, ownContext)
			out := sendOutcome{lookedUp: true, listed: listed, lookupErr: err, task: t, sent: sent}
			if t != nil {
				// ListTasks answers without artifacts: read the task in full.
				full, err := c.Get(ctx, t.ID, lease)
				if err != nil {
					return out, err
				}
				out.task = full
			}
			return out, nil
		}
		t, err := c.Send(ctx, req)
		return sendOutcome{task: t, sent: sent}, err
	})
	do := c.Do
	c.Do = func(ctx context.Context) (any, error) {
		v, err := do(ctx)
		if v != nil {
			return v, err
		}
		if lookUp {
			// A look-up that could not even be made (no client: a Secret
			// missing) is a failed look-up, never taken for a failed send.
			return sendOutcome{lookedUp: true, listed: true, lookupErr: err, sent: sent}, nil
		}
		return sendOutcome{sent: sent}, err
	}
	r.Calls.Submit(urgent(c))
}

// urgent marks a call whose answer starts following a task.
func urgent(c agentio.Call) agentio.Call {
	c.Urgent = true
	return c
}

// dispatchAdopt reads spec.taskID back to adopt it.
func (r *DelegationReconciler) dispatchAdopt(s *scope) {
	id, lease := s.d.Spec.TaskID, s.d.Spec.Lease != nil
	r.Calls.Submit(urgent(r.newCall(s.d, s.agent, agentio.KindSend, func(ctx context.Context, c a2a.Client) (any, error) {
		t, err := c.Get(ctx, id, lease)
		if err == nil {
			t = withSenderEvidence(ctx, c, t)
		}
		return sendOutcome{task: t}, err
	})))
}

// dispatchGet reads the task back now (the scheduler does it on its cadence).
func (r *DelegationReconciler) dispatchGet(s *scope) {
	r.Calls.Submit(r.readCall(s))
}

// readCall reads the task back (renewing its lease, if any): the call a
// pass dispatches now and the one the scheduler repeats.
func (r *DelegationReconciler) readCall(s *scope) agentio.Call {
	id, lease, replyCheck := s.d.Status.TaskID, s.d.Spec.Lease != nil, replyCheckOf(s.d, s.agent)
	return r.newCall(s.d, s.agent, agentio.KindGet, func(ctx context.Context, c a2a.Client) (any, error) {
		return readTask(ctx, c, id, lease, replyCheck)
	})
}

// dispatchReply sends spec.replies[i] to the task.
func (r *DelegationReconciler) dispatchReply(s *scope, i int) {
	req := replyRequest(s.d, i)
	r.Calls.Submit(r.newCall(s.d, s.agent, agentio.KindReply, func(ctx context.Context, c a2a.Client) (any, error) {
		return c.Send(ctx, req)
	}))
}

// dispatchCancel sends CancelTask; a task whose send may have reached the
// agent without an answer is looked up first. It is used by a Delegation's
// own cancel and by its ancestors' cascades, which dispatch it from the
// cache without waiting for any write.
func (r *DelegationReconciler) dispatchCancel(d *v1alpha1.Delegation, agent *v1alpha1.Agent) bool {
	id, sendStarted := d.Status.TaskID, d.Status.SendStarted != nil || sendMarker(d) != nil
	// A send whose result says nothing reached the agent needs no look-up.
	lookUp := id == "" && sendStarted && d.Status.SendResult != v1alpha1.SendNotSent
	contextID, uid := delegation.ContextID(&d.Spec, string(d.UID)), string(d.UID)
	ownContext := d.Spec.Message != nil && d.Spec.Message.ContextID != ""
	canList := agentCanList(agent)
	// A send still waiting for room never reached the agent: drop it.
	r.Calls.Drop(callKey(d, agentio.KindSend))
	return r.Calls.Submit(r.newCallWith(d, agent, agentio.KindCancel, true, func(ctx context.Context, c a2a.Client) (any, error) {
		if lookUp {
			// Never record Canceled on a look-up that failed.
			t, listed, err := lookUpSent(ctx, c, canList, contextID, uid, ownContext)
			switch {
			case err != nil:
				return cancelOutcome{lookupErr: err}, nil
			case t != nil:
				id = t.ID
			case !listed:
				return cancelOutcome{unconfirmed: true}, nil
			}
		}
		if id == "" {
			return cancelOutcome{}, nil
		}
		t, err := c.Cancel(ctx, id)
		if a2a.IsTaskNotFound(err) {
			return cancelOutcome{taskID: id}, nil // nothing left to cancel
		}
		if errors.Is(err, a2a.ErrAnswerTooLarge) {
			// The agent answered the cancel; only its answer was too large
			// to read. Read the task back for its final state, if it can be.
			if t, gerr := c.Get(ctx, id, false); gerr == nil {
				return cancelOutcome{task: t, taskID: id}, nil
			}
			return cancelOutcome{taskID: id}, nil
		}
		return cancelOutcome{task: t, taskID: id}, err
	}))
}

// take takes a finished call's result for this pass; if the pass cannot
// write what it made of it, the result is put back (see Reconcile).
func (r *DelegationReconciler) take(s *scope, key agentio.Key) (agentio.Result, bool) {
	res, ok := r.Calls.Take(key)
	if ok {
		s.taken = append(s.taken, takenResult{key: key, res: res})
		if res.Finished.After(s.answeredAt) {
			s.answeredAt = res.Finished
		}
	}
	return res, ok
}

type takenResult struct {
	key agentio.Key
	res agentio.Result
}

// waitForCall leaves a pass whose call is queued or running: the result
// wakes the Delegation. A call queued behind a saturated pool for longer
// than busyAfter is shown (reason AgentBusy); until then nothing is written.
func (r *DelegationReconciler) waitForCall(s *scope, cs agentio.CallState, phase v1alpha1.Phase) ctrl.Result {
	waited := r.clock().Since(cs.Queued)
	if cs.Running {
		s.skipStatus = true
		return ctrl.Result{}
	}
	if waited < busyAfter {
		s.skipStatus = true
		return ctrl.Result{RequeueAfter: busyAfter - waited}
	}
	r.setPhase(s, delegation.Progress(phase, delegation.ReasonAgentBusy,
		fmt.Sprintf("waiting %s for room among the calls to agent %s (maxConcurrentCalls)", waited.Round(time.Second), s.d.Spec.AgentRef.Name)))
	return ctrl.Result{RequeueAfter: busyAfter}
}

// follow hands a running task to the scheduler, or takes it away once the
// task settled, detached or is being deleted. seen is what the task last
// reported as applied to status ("" when unknown: the first read wakes the
// Delegation).
func (r *DelegationReconciler) follow(s *scope, seen *string) {
	key := client.ObjectKeyFromObject(s.d)
	st := &s.d.Status
	if st.TaskID == "" || delegation.Settled(st.Phase) || s.agent == nil || !s.d.DeletionTimestamp.IsZero() {
		r.Scheduler.Untrack(key)
		return
	}
	interval := pollInterval(s.agent)
	if renew := delegation.RenewInterval(&s.d.Spec); renew > 0 && renew < interval {
		interval = renew
	}
	f := agentio.Follow{Call: r.readCall(s), Interval: interval, Since: s.answeredAt}
	if seen != nil {
		f.Seen = *seen
	}
	r.Scheduler.Track(key, f)
}
