/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/tracing"
)

// Every call to an agent is an operation of internal/agentio, made with
// plain values on the Agent's pool; the functions here only pick the
// operation and its values (they never touch status). The answer is taken
// and applied by the next reconcile, in delegation_task.go and
// delegation_cancel.go.

// busyAfter is how long a call may wait for room in its Agent's pool before
// the Delegation says so (reason AgentBusy).
const busyAfter = 2 * time.Second

func callKey(d *v1alpha1.Delegation, kind agentio.Kind) agentio.Key {
	return agentio.Key{Delegation: client.ObjectKeyFromObject(d), Kind: kind}
}

// target is where a Delegation's calls go, and the span their spans are
// children of (when tracing is on).
func (r *DelegationReconciler) target(d *v1alpha1.Delegation, agent *v1alpha1.Agent) agentio.Target {
	t := agentio.Target{Agent: agent, Tenant: d.Spec.Tenant, TaskID: d.Status.TaskID}
	if tracing.On() {
		t.Trace, _ = tracing.Of(context.Background(), r.Client, d)
	}
	return t
}

// lookUpRequest looks up the task of this Delegation's first send; a look-up
// that finds nothing proves it never started only after the send's
// recorded deadline.
func (r *DelegationReconciler) lookUpRequest(d *v1alpha1.Delegation) agentio.LookUpRequest {
	var earlier []string
	for _, a := range d.Status.Attempts {
		if a.TaskID != "" {
			earlier = append(earlier, a.TaskID)
		}
	}
	return agentio.LookUpRequest{
		ContextID:  delegation.ContextID(&d.Spec, string(d.UID)),
		UID:        string(d.UID),
		Attempt:    delegation.AttemptOf(&d.Status),
		Earlier:    earlier,
		OwnContext: d.Spec.Message != nil && d.Spec.Message.ContextID != "",
		Lease:      d.Spec.Lease != nil,
		ProofAfter: delegation.LookUpProvesAfter(&d.Status, r.Calls.MaxCallTimeout),
		Fenced:     d.Status.SendDeadline != nil,
	}
}

// dispatchSend sends the first message. The terms it is made under are
// kept until its answer is applied (see sentTerms).
func (r *DelegationReconciler) dispatchSend(s *scope) {
	r.memory.sentTerms.Store(client.ObjectKeyFromObject(s.d),
		sentTerms{marker: s.d.Status.SendStarted.DeepCopy(), deadline: s.d.Status.Deadline.DeepCopy()})
	t := r.target(s.d, s.agent)
	t.MayStart = r.stillGranted(s.d)
	r.Calls.Send(client.ObjectKeyFromObject(s.d), t, r.sendRequest(s, delegation.ContextID(&s.d.Spec, string(s.d.UID))),
		s.sendLeaveBy)
}

// dispatchLookUp looks an earlier send up (and reads a task it finds in
// full); it never sends: what follows is decided when its answer is applied.
func (r *DelegationReconciler) dispatchLookUp(s *scope) {
	r.Calls.LookUp(client.ObjectKeyFromObject(s.d), r.target(s.d, s.agent), r.lookUpRequest(s.d))
}

// dispatchAdopt reads spec.taskID back to adopt it.
func (r *DelegationReconciler) dispatchAdopt(s *scope) {
	r.Calls.Adopt(client.ObjectKeyFromObject(s.d), r.target(s.d, s.agent), s.d.Spec.TaskID, s.d.Spec.Lease != nil)
}

// dispatchGet reads the task back now (the scheduler does it on its cadence).
func (r *DelegationReconciler) dispatchGet(s *scope) {
	r.Calls.Read(client.ObjectKeyFromObject(s.d), r.target(s.d, s.agent), readRequest(s.d, s.agent))
}

// readRequest reads the task back (renewing its lease, if any): the read a
// pass makes now and the one the scheduler repeats. While a reply's answer
// is unknown at an agent that can list, the read also finds the client's
// recent messages, so the reply can be checked.
func readRequest(d *v1alpha1.Delegation, agent *v1alpha1.Agent) agentio.ReadRequest {
	q := agentio.ReadRequest{TaskID: d.Status.TaskID, Lease: d.Spec.Lease != nil}
	if d.Status.ReplyInFlight && d.Status.ContextID != "" && agentio.CanList(agent) {
		q.ReplyContextID = d.Status.ContextID
	}
	return q
}

// dispatchReply sends spec.replies[i] to the task.
func (r *DelegationReconciler) dispatchReply(s *scope, i int) {
	r.Calls.Reply(client.ObjectKeyFromObject(s.d), r.target(s.d, s.agent), replyRequest(s.d, i))
}

// dispatchCancel sends CancelTask; a task whose send may have reached the
// agent without an answer is looked up first. It is used by a Delegation's
// own cancel and by its ancestors' cascades, which dispatch it from the
// cache without waiting for any write.
func (r *DelegationReconciler) dispatchCancel(d *v1alpha1.Delegation, agent *v1alpha1.Agent) bool {
	q := agentio.CancelRequest{TaskID: d.Status.TaskID}
	sendStarted := d.Status.SendStarted != nil || sendMarker(d) != nil
	// A send whose result says nothing reached the agent needs no look-up.
	if q.TaskID == "" && sendStarted && d.Status.SendResult != v1alpha1.SendNotSent {
		lu := r.lookUpRequest(d)
		q.LookUp = &lu
	}
	return r.Calls.Cancel(client.ObjectKeyFromObject(d), r.target(d, agent), q)
}

// take takes a finished call's result for this pass; if the pass cannot
// write what it made of it, the result is put back (see Reconcile).
func (r *DelegationReconciler) take(s *scope, key agentio.Key) (agentio.Answer, bool) {
	res, ok := r.Calls.Take(key)
	if ok {
		s.taken = append(s.taken, takenResult{key: key, res: res})
		if res.Finished.After(s.answeredAt) {
			s.answeredAt = res.Finished
		}
	}
	return res, ok
}

// waitForCall leaves a pass whose call is queued or running: the result
// wakes the Delegation. A call queued behind a saturated pool for longer
// than busyAfter is shown (reason AgentBusy, the record returned); until
// then nothing is written.
func (r *DelegationReconciler) waitForCall(s *scope, cs agentio.CallState, phase v1alpha1.Phase) (ctrl.Result, *delegation.Record) {
	waited := r.clock().Since(cs.Queued)
	if cs.Running {
		s.skipStatus = true
		return ctrl.Result{}, nil
	}
	if waited < busyAfter {
		s.skipStatus = true
		return ctrl.Result{RequeueAfter: busyAfter - waited}, nil
	}
	// The message names when the wait began, not how long it has been, so
	// a Delegation waiting for minutes is written once, not at every pass:
	// thousands of them waiting at a slow agent would otherwise spend the
	// operator's API budget on the wait itself.
	rec := delegation.Progress(phase, delegation.ReasonAgentBusy,
		fmt.Sprintf("waiting since %s for room among the calls to agent %s (its maxConcurrentCalls, or the operator's --max-answer-bytes)",
			cs.Queued.UTC().Format(time.RFC3339), s.d.Spec.AgentRef.Name))
	// The call's end wakes the Delegation; the requeue is only a safety
	// net, so waiting Delegations do not crowd the work queue.
	return ctrl.Result{RequeueAfter: busyRecheck}, &rec
}

// busyRecheck is how often a Delegation shown waiting for room looks again.
const busyRecheck = 30 * time.Second

// schedule hands a running task to the scheduler, or takes it away once the
// task settled, detached or is being deleted. seen is what the task last
// reported as applied to status ("" when unknown: the first read wakes the
// Delegation).
func (r *DelegationReconciler) schedule(s *scope, seen *string) {
	key := client.ObjectKeyFromObject(s.d)
	if !followed(s.d, s.agent) {
		r.Scheduler.Untrack(key)
		return
	}
	f := r.followOf(s.d, s.agent)
	if !s.answeredAt.IsZero() {
		f.Since = s.answeredAt
	} else {
		// Picked up from status (a restart, a shard's new leader): when the
		// task was last renewed is not known here, so it is read at once.
		f.Since = r.now().Add(-f.Interval)
	}
	if seen != nil {
		f.Seen = *seen
	}
	r.Scheduler.Track(key, f)
}

// followed says whether the scheduler follows the Delegation's task: it
// runs at the agent and the operator has not let go of it.
func followed(d *v1alpha1.Delegation, agent *v1alpha1.Agent) bool {
	return d.Status.TaskID != "" && !delegation.Settled(d.Status.Phase) && agent != nil && d.DeletionTimestamp.IsZero()
}

// followOf is how the scheduler reads the task back: every ttl/3 when it
// is leased, at the Agent's pollInterval otherwise.
func (r *DelegationReconciler) followOf(d *v1alpha1.Delegation, agent *v1alpha1.Agent) agentio.Follow {
	interval := pollInterval(agent)
	if renew := delegation.RenewInterval(&d.Spec); renew > 0 && renew < interval {
		interval = renew
	}
	return agentio.Follow{Target: r.target(d, agent), Read: readRequest(d, agent), Interval: interval}
}

func (r *DelegationReconciler) sendRequest(s *scope, contextID string) a2a.SendRequest {
	d := s.d
	req := a2a.SendRequest{
		MessageID: delegation.AttemptMessageID(string(d.UID), delegation.AttemptOf(&d.Status)),
		ContextID: contextID,
		Skill:     d.Spec.Skill,
		Metadata:  map[string]any{},
	}
	if m := d.Spec.Message; m != nil {
		req.Text = m.Text
		for k, v := range m.Metadata {
			req.Metadata[k] = v
		}
		req.Parts = wireParts(m.Parts)
	}
	// The identity claim is written last: user metadata never overrides it
	// (admission also refuses keys under https://tether.dev/).
	req.Metadata[a2a.DelegationMetadataKey] = d.Namespace + "/" + d.Name
	if d.Spec.Lease != nil {
		req.Lease = &a2a.LeaseRequest{TTL: d.Spec.Lease.TTL.Duration}
	}
	if r.Push != nil && s.agent != nil && s.agent.Status.PushNotifications {
		req.Push = r.Push.Target(d)
	}
	if b := d.Status.Budget; (b != nil && b.Granted != nil) || d.Status.Deadline != nil {
		req.Budget = &a2a.BudgetGrant{}
		if b != nil {
			// A later attempt is offered what the earlier ones left.
			req.Budget.Meters = delegation.AttemptGrant(b)
		}
		if d.Status.Deadline != nil {
			req.Budget.Deadline = d.Status.Deadline.Time
		}
	}
	return req
}

// reservedMetadataPrefix marks metadata keys only the operator writes.
const reservedMetadataPrefix = "https://tether.dev/"

// replyRequest builds the send of spec.replies[i] to the task waiting for
// input: its text, parts and metadata, with the extensions it names activated
// for this call only. The message id is derived from the UID and the index,
// so a retried reply is recognisable.
func replyRequest(d *v1alpha1.Delegation, i int) a2a.SendRequest {
	r := d.Spec.Replies[i]
	req := a2a.SendRequest{
		MessageID:  delegation.MessageID(string(d.UID), i),
		ContextID:  d.Status.ContextID,
		TaskID:     d.Status.TaskID,
		Text:       r.Text,
		Parts:      wireParts(r.Parts),
		Extensions: r.Extensions,
	}
	if len(r.Metadata) > 0 {
		req.Metadata = make(map[string]any, len(r.Metadata))
		for k, v := range r.Metadata {
			// Keys under https://tether.dev/ are the operator's (the delegation
			// identity claim lives there): a reply never carries them.
			if strings.HasPrefix(k, reservedMetadataPrefix) {
				continue
			}
			// JSON values pass through as they are (a2a keeps numbers exact).
			req.Metadata[k] = json.RawMessage(v.Raw)
		}
	}
	// A reply carries the claim of the Delegation sending it, as the first
	// message does: agents never take it from the task's history.
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	req.Metadata[a2a.DelegationMetadataKey] = d.Namespace + "/" + d.Name
	return req
}

// wireParts converts a message's or a reply's parts.
func wireParts(parts []v1alpha1.Part) []a2a.Part {
	out := make([]a2a.Part, 0, len(parts))
	for _, p := range parts {
		part := a2a.Part{Text: p.Text, URL: p.URL, MediaType: p.MediaType, Filename: p.Filename}
		if p.Data != nil {
			part.Data = p.Data.Raw
		}
		out = append(out, part)
	}
	return out
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
