/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// errDeadline is the cause the executor's context is cancelled with when the
// budget deadline passes, so the kit can tell it from a client's cancel.
var errDeadline = errors.New("budget deadline passed")

// executor wraps an agent's executor with the lease and budget extensions.
type executor struct {
	kit   *Kit
	inner a2asrv.AgentExecutor
}

var (
	_ a2asrv.AgentExecutor         = (*executor)(nil)
	_ a2asrv.AgentExecutionCleaner = (*executor)(nil)
)

// run is one execution of a task: what the kit decorates events with.
type run struct {
	ec         *a2asrv.ExecutorContext
	budget     *Budget
	lease      *Lease
	taskExists bool
	settled    bool // the executor wrote a final event (terminal, interrupted or a message)
}

func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		k := e.kit
		r, err := k.startRun(ctx, ec)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx = withBudget(ctx, r.budget)
		if c, ok := callerOf(ec.User); ok {
			ctx = withCaller(ctx, c)
		}
		if d, ok := delegationOf(ec); ok {
			d.kit = k
			ctx = withDelegation(ctx, d)
		}
		ctx, span := startTaskSpan(ctx, ec)
		defer span.End()

		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if dl := r.budget.Deadline(); !dl.IsZero() {
			wait := dl.Sub(k.clock.Now())
			if wait <= 0 {
				r.failBudget(yield, "budget deadline passed before the task started")
				return
			}
			t := time.AfterFunc(wait, func() { cancel(errDeadline) })
			defer t.Stop()
		}

		for ev, err := range e.inner.Execute(ctx, ec) {
			if errors.Is(context.Cause(ctx), errDeadline) {
				break // the deadline has the last word
			}
			if err != nil {
				if errors.Is(err, ErrBudgetExhausted) {
					r.failBudget(yield, err.Error())
					return
				}
				yield(nil, err)
				return
			}
			r.decorate(ev)
			if !yield(ev, nil) {
				return
			}
		}
		switch {
		case r.settled:
		case errors.Is(context.Cause(ctx), errDeadline):
			r.failBudget(yield, "budget deadline passed")
		case r.budget.wasExhausted():
			r.failBudget(yield, "budget exhausted")
		}
	}
}

// Cancel lets the agent stop its work and guarantees the task ends Canceled:
// a2a-go only stops a running execution once a Canceled event is written.
func (e *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		k := e.kit
		r := &run{ec: ec, budget: k.budget(ec.TaskID), taskExists: true}
		var reason *a2a.Message
		if l, ok, err := k.leases.Get(ctx, ec.TaskID); err == nil && ok && !k.clock.Now().Before(l.ExpiresAt) {
			reason = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec,
				a2a.NewTextPart(fmt.Sprintf("lease expired at %s without renewal", l.ExpiresAt.UTC().Format(time.RFC3339))))
		}
		for ev, err := range e.inner.Cancel(ctx, ec) {
			if err != nil {
				yield(nil, err)
				return
			}
			if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Status.State == a2a.TaskStateCanceled && reason != nil {
				su.Status.Message = reason
			}
			r.decorate(ev)
			if !yield(ev, nil) {
				return
			}
		}
		if !r.settled {
			ev := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, reason)
			r.decorate(ev)
			yield(ev, nil)
		}
	}
}

// Cleanup forgets the lease and budget of a task that can no longer change.
func (e *executor) Cleanup(ctx context.Context, ec *a2asrv.ExecutorContext, result a2a.SendMessageResult, err error) {
	switch res := result.(type) {
	case *a2a.Message:
		e.kit.forget(ctx, ec.TaskID)
	case *a2a.Task:
		if res.Status.State.Terminal() {
			e.kit.forget(ctx, ec.TaskID)
		}
	}
	if c, ok := e.inner.(a2asrv.AgentExecutionCleaner); ok {
		c.Cleanup(ctx, ec, result, err)
	}
}

// startRun grants or renews the lease and finds the task's budget.
func (k *Kit) startRun(ctx context.Context, ec *a2asrv.ExecutorContext) (*run, error) {
	now := k.clock.Now()
	r := &run{ec: ec, taskExists: ec.StoredTask != nil}

	ttl, err := leaseRequest(ec.Message, ec.Metadata, k.maxTTL)
	if err != nil {
		return nil, err
	}
	if ttl != nil {
		owner, _ := taskOwner(ctx)
		l := Lease{TaskID: ec.TaskID, TTL: *ttl, ExpiresAt: now.Add(*ttl), Owner: owner}
		if err := k.leases.Put(ctx, l); err != nil {
			return nil, fmt.Errorf("recording lease: %w", err)
		}
		r.lease = &l
	} else if l, ok, err := k.leases.Renew(ctx, ec.TaskID, now); err == nil && ok {
		// A reply to a leased task is a sign of life too.
		r.lease = &l
	}

	b, err := k.budgetFor(ec)
	if err != nil {
		return nil, err
	}
	r.budget = b
	return r, nil
}

// decorate stamps the kit's metadata on an event on its way to the task store.
func (r *run) decorate(ev a2a.Event) {
	switch v := ev.(type) {
	case *a2a.Message:
		r.settled = true
	case *a2a.Task:
		r.taskExists = true
		if r.lease != nil {
			v.SetMeta(tethera2a.LeaseExtensionURI, leaseGrantMeta(*r.lease))
		}
		r.stampBudget(v, v.Status.Message)
		r.note(v.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		if v.Status.State == a2a.TaskStateFailed && r.budget.wasExhausted() {
			// The agent failed after a refused charge; say why if it did not.
			if v.Status.Message == nil {
				v.Status.Message = a2a.NewMessageForTask(a2a.MessageRoleAgent, r.ec, a2a.NewTextPart("budget exhausted"))
			}
			if _, ok := v.Status.Message.Metadata[tethera2a.FailureClassMetadataKey]; !ok {
				v.Status.Message.SetMeta(tethera2a.FailureClassMetadataKey, string(v1alpha1.FailureBudgetExhausted))
			}
		}
		r.stampBudget(v, v.Status.Message)
		r.note(v.Status.State)
	}
}

// stampBudget puts the budget report on the event (which a2a-go merges into
// the task metadata) and on its status message when there is one.
func (r *run) stampBudget(carrier a2a.MetadataCarrier, msg *a2a.Message) {
	if r.budget == nil || !r.budget.reports() {
		return
	}
	report := r.budget.report()
	carrier.SetMeta(tethera2a.BudgetExtensionURI, toMeta(report))
	if msg != nil {
		msg.SetMeta(tethera2a.BudgetExtensionURI, toMeta(report))
	}
}

func (r *run) note(s a2a.TaskState) {
	if s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired {
		r.settled = true
	}
}

// failBudget ends the task Failed with class BudgetExhausted, creating the
// task first when the executor never did.
func (r *run) failBudget(yield func(a2a.Event, error) bool, text string) {
	if !r.taskExists {
		task := a2a.NewSubmittedTask(r.ec, r.ec.Message)
		r.decorate(task)
		if !yield(task, nil) {
			return
		}
	}
	ev := FailEvent(r.ec, v1alpha1.FailureBudgetExhausted, text)
	r.decorate(ev)
	yield(ev, nil)
}

// FailEvent is a status update that fails a task with a failure class in the
// status message metadata, where the operator reads it.
func FailEvent(info a2a.TaskInfoProvider, class v1alpha1.FailureClass, text string) *a2a.TaskStatusUpdateEvent {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart(text))
	msg.SetMeta(tethera2a.FailureClassMetadataKey, string(class))
	return a2a.NewStatusUpdateEvent(info, a2a.TaskStateFailed, msg)
}

func (k *Kit) forget(ctx context.Context, id a2a.TaskID) {
	if err := k.leases.Delete(ctx, id); err != nil {
		log.Warn(ctx, "forgetting lease failed", "task_id", id, "error", err)
	}
	k.mu.Lock()
	delete(k.budgets, id)
	k.mu.Unlock()
}
