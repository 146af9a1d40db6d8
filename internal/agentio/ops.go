/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"go.opentelemetry.io/otel/trace"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// The operations below are every call the operator makes to an agent for a
// Delegation. Each takes plain values, runs on the Agent's pool and leaves
// an Answer for the Delegation's next pass (Take), which wakes it.

// Target is where an operation goes: the Agent (as the cache holds it; the
// layer keeps its own read-only copy) and the tenant the task lives in.
type Target struct {
	Agent  *v1alpha1.Agent
	Tenant string
	// Trace is the Delegation's span context (tracing.Of): each call's span
	// is its child. TaskID names the task, when known, for those spans.
	Trace  trace.SpanContext
	TaskID string
	// MayStart, when set, is asked as a send (not any other call) leaves
	// its pool: an error keeps it from leaving, answered as never made (a
	// revoked AgentGrant stops a send that waited for room).
	MayStart func() error
}

// SendRequest sends a Delegation's first message.
type SendRequest = a2a.SendRequest

// LookUpRequest looks the task of an earlier send up by its context.
type LookUpRequest struct {
	// ContextID is the context the send was made in.
	ContextID string
	// UID is the Delegation's UID, from which the send's message id derives.
	UID string
	// Attempt is the attempt whose send is looked up (from 1), and Earlier
	// the task ids of the attempts before it: their tasks share the context.
	Attempt int32
	Earlier []string
	// OwnContext: the user gave the context id, so other tasks may share it.
	OwnContext bool
	// Lease: a task found is read back with the lease extension (renewed).
	Lease bool
	// ProofAfter is when an answered look-up that finds no task starts to
	// prove the send never started, for a send this process did not make
	// (delegation.LookUpProvesAfter: the recorded send deadline).
	ProofAfter time.Time
	// Fenced: the send was recorded with its deadline, so by a build whose
	// calls leave only while it holds its shard's Lease: no send of an
	// earlier leader left after this process began to lead.
	Fenced bool
}

// ReadRequest reads a task back; with Lease it renews the task's lease.
type ReadRequest struct {
	TaskID string
	Lease  bool
	// ReplyContextID, when set, is the context listed to find the client's
	// recent message ids when the task read carries none (a reply whose
	// answer was lost is being checked).
	ReplyContextID string
}

// CancelRequest cancels a task.
type CancelRequest struct {
	// TaskID is the task; empty when the send's answer never came.
	TaskID string
	// LookUp, when set and TaskID is empty, finds the task first.
	LookUp *LookUpRequest
}

// CanList says whether the Agent can list tasks for the operator, as probed
// when its card was read (status.canListTasks); before a probe got an
// answer, a 0.3 agent cannot and a 1.0 agent is asked (a refusal to list
// then counts as cannot).
func CanList(agent *v1alpha1.Agent) bool {
	if agent == nil {
		return false
	}
	if can := agent.Status.CanListTasks; can != nil {
		return *can
	}
	return agent.Status.ProtocolVersion != a2a.ProtocolV03
}

// Send sends the first message. Its answer wakes the Delegation ahead of
// other work: until it is applied, the task is neither followed nor renewed.
// A send that has not left its pool by leaveBy (zero: no bound) is answered
// as never made: its recorded deadline no longer covers it.
func (d *Dispatcher) Send(key types.NamespacedName, t Target, req SendRequest, leaveBy time.Time) bool {
	c := d.newCall(key, KindStart, t, true, false, func(ctx context.Context, c a2a.Client) Answer {
		return answer(c.Send(ctx, req))
	})
	c.sends, c.leaveBy, c.mayStart = true, leaveBy, t.MayStart
	return d.Submit(c)
}

// LookUp looks an earlier send's task up and reads a task it finds in full;
// it never sends. It takes the send's place: one of the two is on its way.
func (d *Dispatcher) LookUp(key types.NamespacedName, t Target, q LookUpRequest) bool {
	canList := CanList(t.Agent)
	c := d.newCall(key, KindStart, t, true, false, func(ctx context.Context, c a2a.Client) Answer {
		found, lu := lookUp(ctx, c, canList, q)
		a := Answer{LookUp: &lu}
		if found != nil {
			// ListTasks answers without artifacts: read the task in full.
			a.Task, a.Err = c.Get(ctx, found.ID, q.Lease)
			if a.Err != nil {
				a.Task = found
			}
		}
		return a
	})
	c.lookUp, c.proofAfter, c.fencedSend = true, q.ProofAfter, q.Fenced
	do := c.do
	c.do = func(ctx context.Context) Answer {
		a := do(ctx)
		if a.LookUp == nil {
			// A look-up that could not even be made (no client: a Secret
			// missing) is a failed look-up, never taken for a failed send.
			return Answer{LookUp: &LookUpAnswer{Listed: true, Err: a.Err}}
		}
		return a
	}
	return d.Submit(c)
}

// Adopt reads spec.taskID back to follow it, with the evidence of who sent
// it (withSenderEvidence) for the adoption check.
func (d *Dispatcher) Adopt(key types.NamespacedName, t Target, taskID string, lease bool) bool {
	return d.Submit(d.newCall(key, KindStart, t, true, false, func(ctx context.Context, c a2a.Client) Answer {
		task, err := c.Get(ctx, taskID, lease)
		if err == nil {
			task = withSenderEvidence(ctx, c, task)
		}
		return answer(task, err)
	}))
}

// withSenderEvidence adds to a task read for adoption the ids of its recent
// messages, from a look-up by its context (a read asks for no history): they
// may name the Delegation that sent it when the context id does not. Agents
// that cannot list leave the context id alone to go by.
func withSenderEvidence(ctx context.Context, c a2a.Client, t *a2a.Task) *a2a.Task {
	if t == nil || t.ContextID == "" {
		return t
	}
	tasks, err := c.ListByContext(ctx, t.ContextID)
	if err != nil {
		return t
	}
	for _, listed := range tasks {
		if listed.ID == t.ID {
			t.MessageIDs = append(t.MessageIDs, listed.MessageIDs...)
		}
	}
	return t
}

// Read reads the task back now (the scheduler does it on its cadence).
func (d *Dispatcher) Read(key types.NamespacedName, t Target, q ReadRequest) bool {
	return d.Submit(d.readCall(key, t, q))
}

func (d *Dispatcher) readCall(key types.NamespacedName, t Target, q ReadRequest) Call {
	return d.newCall(key, KindGet, t, false, false, func(ctx context.Context, c a2a.Client) Answer {
		return answer(readTask(ctx, c, q))
	})
}

// Reply sends spec.replies[i] to the task.
func (d *Dispatcher) Reply(key types.NamespacedName, t Target, req SendRequest) bool {
	return d.Submit(d.newCall(key, KindReply, t, false, false, func(ctx context.Context, c a2a.Client) Answer {
		return answer(c.Send(ctx, req))
	}))
}

// Cancel sends CancelTask; a send without a task id is looked up first
// (q.LookUp). A send still waiting for room never reached the agent: it is
// dropped; one on its way is waited for, and the task it answered with is
// the one cancelled (fence.go). The client survives the Agent's Secrets (CancelClient), so a
// cancel carries the credentials the task was sent with.
func (d *Dispatcher) Cancel(key types.NamespacedName, t Target, q CancelRequest) bool {
	canList := CanList(t.Agent)
	c := d.newCall(key, KindCancel, t, false, true, func(ctx context.Context, c a2a.Client) Answer {
		var a Answer
		id := q.TaskID
		if id == "" {
			id = d.sentTask(key) // the send this cancel waited for answered
		}
		if id == "" && q.LookUp != nil {
			// Never record Canceled on a look-up that failed.
			found, lu := lookUp(ctx, c, canList, *q.LookUp)
			a.LookUp = &lu
			if found == nil {
				return a
			}
			id = found.ID
		}
		if id == "" {
			return a
		}
		a.TaskID = id
		task, err := c.Cancel(ctx, id)
		switch {
		case a2a.IsTaskNotFound(err):
			return a // nothing left to cancel
		case errors.Is(err, a2a.ErrAnswerTooLarge):
			// The agent answered the cancel; only its answer was too large
			// to read. Read the task back for its final state, if it can be.
			if task, gerr := c.Get(ctx, id, false); gerr == nil {
				a.Task = task
			}
			return a
		}
		a.Task, a.Err = task, err
		return a
	})
	if q.LookUp != nil {
		c.lookUp, c.proofAfter, c.fencedSend = true, q.LookUp.ProofAfter, q.LookUp.Fenced
	}
	cancel := c.do
	c.do = func(ctx context.Context) Answer {
		if q.TaskID == "" && q.LookUp == nil && d.sentTask(key) == "" {
			return Answer{} // nothing was sent: nothing to cancel, no client needed
		}
		return cancel(ctx)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancelAfter(c)
}

// lookUp looks for the task of a send whose answer was lost. Listed is
// false when the agent cannot list tasks for the operator (0.3, no
// ListTasks, ListTasks only for authenticated callers): then nothing can be
// found. An error means the look-up may work later.
func lookUp(ctx context.Context, c a2a.Client, canList bool, q LookUpRequest) (*a2a.Task, LookUpAnswer) {
	if !canList {
		return nil, LookUpAnswer{}
	}
	tasks, err := c.ListByContext(ctx, q.ContextID)
	if err != nil {
		if cannotList(err) {
			return nil, LookUpAnswer{}
		}
		return nil, LookUpAnswer{Listed: true, Err: err}
	}
	t, err := delegation.OwnAttemptTask(tasks, q.UID, q.Attempt, q.Earlier, q.OwnContext)
	return t, LookUpAnswer{Listed: true, Err: err}
}

// readTask reads a task. With a reply in flight whose answer was lost, a
// task read without the client's recent message ids is completed by listing
// its context, so the reply can be checked; a failed listing fails the
// read, which is retried at the task's cadence.
func readTask(ctx context.Context, c a2a.Client, q ReadRequest) (*a2a.Task, error) {
	t, err := c.Get(ctx, q.TaskID, q.Lease)
	if err != nil || q.ReplyContextID == "" || len(t.MessageIDs) > 0 {
		return t, err
	}
	tasks, err := c.ListByContext(ctx, q.ReplyContextID)
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

// cannotList: an agent that refuses to list, or a context too large to
// read, cannot tell us anything: the same as an agent that cannot list.
func cannotList(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, a2a.ErrUnsupported) || errors.Is(err, a2a.ErrCannotList) || errors.Is(err, a2a.ErrTooManyTasks) ||
		a2a.Classify(err) == a2a.ClassRefused
}

// newCall builds a call for one operation: the Agent's pool settings, and a
// client for the Agent's recorded endpoint built (or reused) when the call
// runs, on the pool.
func (d *Dispatcher) newCall(key types.NamespacedName, kind Kind, t Target, urgent, forCancel bool,
	op func(context.Context, a2a.Client) Answer) Call {
	agent := d.shared(t.Agent)
	c := Call{Key: Key{Delegation: key, Kind: kind}, Agent: types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name},
		Urgent: urgent, Trace: t.Trace, TaskID: t.TaskID}
	if agent.Spec.MaxConcurrentCalls != nil {
		c.PoolSize = int(*agent.Spec.MaxConcurrentCalls)
	}
	if agent.Spec.RequestTimeout != nil {
		c.Timeout = agent.Spec.RequestTimeout.Duration
	}
	tenant, connector := t.Tenant, d.Connector
	c.do = func(ctx context.Context) Answer {
		build := connector.Client
		if forCancel {
			build = connector.CancelClient
		}
		cl, release, err := build(ctx, agent, tenant)
		if err != nil {
			return Answer{Err: a2a.NotMade(err)}
		}
		defer release()
		return op(ctx, cl)
	}
	return c
}

// shared returns a copy of agent that calls share and nobody changes:
// 10,000 followed tasks of one Agent hold one copy, not 10,000.
func (d *Dispatcher) shared(agent *v1alpha1.Agent) *v1alpha1.Agent {
	key := types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}
	if v, ok := d.agents.Load(key); ok {
		if c := v.(*v1alpha1.Agent); c.UID == agent.UID && c.ResourceVersion == agent.ResourceVersion {
			return c
		}
	}
	c := agent.DeepCopy()
	d.agents.Store(key, c)
	return c
}

// ForgetAgent drops what the layer keeps of an Agent that is gone, its
// HTTP transport among it (its idle connections closed).
func (d *Dispatcher) ForgetAgent(key types.NamespacedName) {
	d.agents.Delete(key)
	if d.Connector != nil {
		d.Connector.ForgetAgent(key)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.readLimits, key)
}
