/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package sample

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// DefaultFanout is the number of children when Orchestrator.Fanout is not set.
const DefaultFanout = 3

// Orchestrator fans a task out to worker agents through child Delegations
// (agentkit.DelegateAsync and agentkit.Wait), splits what is left of its
// budget among them, waits for all and completes with a summary. It must be
// sent tasks by the tether operator, which names the current Delegation in
// the message metadata. Serve it with agentkit.NewServer.
//
// Words in the message text:
//
//	fanout=N   create N children (1..100) instead of Fanout
//
// The whole text is passed on to every child, so worker words (ask, fail,
// steps=N, ...) reach the workers. A child that waits for input is waited on
// until someone replies to it; a child that did not succeed fails the
// orchestrator's task with that child's failure class.
type Orchestrator struct {
	// Kube creates and reads the child Delegations.
	Kube client.Client
	// WorkerAgent is the Agent (in the task's namespace) the parts go to.
	WorkerAgent string
	// Fanout is the number of children per task (DefaultFanout when 0).
	Fanout int
	// ChildLease is the lease TTL asked for each child; 0 for none.
	ChildLease time.Duration
	// ChildTimeout is the wall-clock limit of each child; 0 for none.
	ChildTimeout time.Duration
	// Spend is charged to Meter once per task for the orchestrator's own
	// planning, before it splits what is left among the children.
	Spend int64
	// Meter is the meter Spend is charged to (DefaultMeter when empty).
	Meter string
	// Log receives what the orchestrator does; nil discards it.
	Log *slog.Logger
}

// OrchestratorCard is the card the sample orchestrator is served with.
func OrchestratorCard(name string) *a2a.AgentCard {
	return sampleCard(name, "Sample orchestrator: splits a task among workers through child Delegations.", a2a.AgentSkill{
		ID: "fanout", Name: "Fan out", Description: "Delegates the message to fanout=N workers and summarises their results.",
	})
}

// Execute runs one task: plan, fan out, wait, summarise.
func (o Orchestrator) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		log := logger(o.Log)
		parent, fromOperator := agentkit.DelegationFrom(ctx)
		log.Info("task received", "task", ec.TaskID, "delegation", parent.String())
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !fromOperator {
			yield(agentkit.FailEvent(ec, v1alpha1.FailureInvalidRequest,
				"the orchestrator only takes tasks from a Delegation"), nil)
			return
		}
		text := textOf(ec.Message)
		def := o.Fanout
		if def <= 0 {
			def = DefaultFanout
		}
		n := fanoutOf(text, def)

		budget := agentkit.BudgetFrom(ctx)
		meter := o.Meter
		if meter == "" {
			meter = DefaultMeter
		}
		if err := budget.Charge(meter, o.Spend); err != nil {
			yield(nil, err) // the kit fails the task with BudgetExhausted
			return
		}
		// Each child gets an equal share of what is left; the kit holds it.
		var share map[string]int64
		if left := budget.Left(); left != nil {
			share = map[string]int64{}
			for m, v := range left {
				share[m] = v / int64(n)
			}
		}
		keys := make([]client.ObjectKey, 0, n)
		for i := range n {
			key, err := agentkit.DelegateAsync(ctx, o.Kube, agentkit.DelegateRequest{
				Key:     fmt.Sprintf("part-%d", i+1),
				Agent:   o.WorkerAgent,
				Text:    fmt.Sprintf("%s (part %d of %d)", text, i+1, n),
				Budget:  share,
				Lease:   o.ChildLease,
				Timeout: o.ChildTimeout,
			})
			if err != nil {
				class := v1alpha1.FailureTransient
				switch {
				case errors.Is(err, agentkit.ErrBudgetExhausted):
					class = v1alpha1.FailureBudgetExhausted
				case errors.Is(err, agentkit.ErrClaimNotProven), errors.Is(err, agentkit.ErrChildNameTaken):
					class = v1alpha1.FailurePolicyRefusal
				}
				yield(agentkit.FailEvent(ec, class, err.Error()), nil)
				return
			}
			keys = append(keys, key)
		}
		if !yield(status(ec, a2a.TaskStateWorking, fmt.Sprintf("delegated %d parts to %s", n, o.WorkerAgent)), nil) {
			return
		}

		var lines []string
		var failed *agentkit.Outcome
		for i, key := range keys {
			out, err := o.waitSettled(ctx, key)
			if ctx.Err() != nil {
				log.Info("task stopped", "task", ec.TaskID, "cause", context.Cause(ctx))
				return
			}
			if err != nil {
				yield(agentkit.FailEvent(ec, v1alpha1.FailureTransient, err.Error()), nil)
				return
			}
			lines = append(lines, fmt.Sprintf("%s: %s %s", out.Name, out.Phase, firstLine(out.Text+out.Message)))
			if out.Phase != v1alpha1.PhaseSucceeded && failed == nil {
				failed = out
			}
			if !yield(status(ec, a2a.TaskStateWorking, fmt.Sprintf("%d of %d parts settled", i+1, n)), nil) {
				return
			}
		}

		summary := strings.Join(lines, "\n")
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(summary)), nil) {
			return
		}
		if failed != nil {
			class := failed.FailureClass
			if class == "" {
				class = v1alpha1.FailureInternal
			}
			yield(agentkit.FailEvent(ec, class, fmt.Sprintf("%s ended %s", failed.Name, failed.Phase)), nil)
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// waitSettled waits past input-required: a person may reply to the child.
func (o Orchestrator) waitSettled(ctx context.Context, key client.ObjectKey) (*agentkit.Outcome, error) {
	for {
		out, err := agentkit.Wait(ctx, o.Kube, key)
		if err != nil {
			return nil, err
		}
		if out.Phase != v1alpha1.PhaseInputRequired && out.Phase != v1alpha1.PhaseAuthRequired {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(2 * time.Second):
		}
	}
}

// Cancel only logs: the kit ends the task Canceled and the operator cancels
// the children (their parent ended).
func (o Orchestrator) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	logger(o.Log).Info("task cancelled", "task", ec.TaskID)
	return func(func(a2a.Event, error) bool) {}
}

func status(ec *a2asrv.ExecutorContext, s a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	return a2a.NewStatusUpdateEvent(ec, s, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text)))
}

func fanoutOf(text string, def int) int {
	for w := range strings.FieldsSeq(strings.ToLower(text)) {
		if v, ok := strings.CutPrefix(w, "fanout="); ok {
			if n, err := strconv.Atoi(strings.Trim(v, ".,;:!?")); err == nil && n > 0 && n <= 100 {
				return n
			}
		}
	}
	return def
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
