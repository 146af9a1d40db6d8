/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package sample

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// DefaultMeter is the meter steps are charged to when Worker.Meter is empty.
const DefaultMeter = "tokens"

// Worker works through a number of steps, charging its budget for each, and
// honours leases, budget deadlines and cancellation. Serve it with
// agentkit.NewServer.
//
// Words in the message text drive it, so a demo can pick behaviour per task:
//
//	ask        ask for input first (input-required); the reply, sent to the
//	           same task, is worked on and quoted in the result
//	fail       fail after the first step (failure class Internal)
//	refuse     fail at once (failure class PolicyRefusal)
//	forever    keep working until cancelled, or the lease or deadline ends it
//	steps=N    do N steps instead of Steps
//	delay=D    wait D (a Go duration) per step instead of Delay
//	spend=N    charge N per step instead of Spend
type Worker struct {
	// Name is used in the result text.
	Name string
	// Steps is the number of steps per task.
	Steps int
	// Delay is the time each step takes.
	Delay time.Duration
	// Spend is charged to Meter for each step.
	Spend int64
	// Meter is the budget meter steps are charged to (DefaultMeter when empty).
	Meter string
	// FailAll fails every task after its first step.
	FailAll bool
	// Log receives what the worker does; nil discards it.
	Log *slog.Logger
}

// WorkerCard is the card the sample worker is served with.
func WorkerCard(name string) *a2a.AgentCard {
	return sampleCard(name, "Sample worker: does a few steps and reports what it spent.", a2a.AgentSkill{
		ID: "work", Name: "Work", Description: "Works through steps; message words ask, fail, refuse, forever, steps=N, delay=D, spend=N change how.",
	})
}

// plan is what one task asks for.
type plan struct {
	ask, fail, refuse, forever bool
	steps                      int
	delay                      time.Duration
	spend                      int64
}

func (w Worker) plan(text string) plan {
	p := plan{steps: w.Steps, delay: w.Delay, spend: w.Spend, fail: w.FailAll}
	for word := range strings.FieldsSeq(strings.ToLower(text)) {
		word = strings.Trim(word, ".,;:!?()\"'")
		k, v, _ := strings.Cut(word, "=")
		switch k {
		case "ask":
			p.ask = true
		case "fail":
			p.fail = true
		case "refuse":
			p.refuse = true
		case "forever":
			p.forever = true
		case "steps":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				p.steps = n
			}
		case "delay":
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				p.delay = d
			}
		case "spend":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				p.spend = n
			}
		}
	}
	return p
}

func (w Worker) meter() string {
	if w.Meter == "" {
		return DefaultMeter
	}
	return w.Meter
}

// Execute runs one task (or continues one that asked for input).
func (w Worker) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		log := logger(w.Log)
		// A reply continues a task that asked for input; its first message
		// still says what to do.
		reply := ""
		text := textOf(ec.Message)
		if ec.StoredTask != nil && len(ec.StoredTask.History) > 0 {
			reply, text = text, textOf(ec.StoredTask.History[0])
		}
		d, _ := agentkit.DelegationFrom(ctx)
		log.Info("task received", "task", ec.TaskID, "delegation", d.String(), "reply", reply != "")
		p := w.plan(text)

		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if p.refuse {
			yield(agentkit.FailEvent(ec, v1alpha1.FailurePolicyRefusal, "refused: the message asked me to"), nil)
			return
		}
		if p.ask && reply == "" {
			ask := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("What should I work on?"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			return
		}

		budget := agentkit.BudgetFrom(ctx)
		for i := 0; p.forever || i < p.steps; i++ {
			if err := budget.Charge(w.meter(), p.spend); err != nil {
				yield(nil, err) // the kit fails the task with BudgetExhausted
				return
			}
			note := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(fmt.Sprintf("step %d", i+1)))
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, note), nil) {
				return
			}
			select {
			case <-ctx.Done():
				log.Info("task stopped", "task", ec.TaskID, "cause", context.Cause(ctx))
				return
			case <-time.After(p.delay):
			}
			if p.fail {
				yield(agentkit.FailEvent(ec, v1alpha1.FailureInternal, fmt.Sprintf("failed at step %d as asked", i+1)), nil)
				return
			}
		}

		result := fmt.Sprintf("%s did %d steps for: %s", w.Name, p.steps, text)
		if reply != "" {
			result += "\ngot: " + reply
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(result)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel only logs: the kit ends the task Canceled, and a2a-go then cancels
// the context Execute is watching.
func (w Worker) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	logger(w.Log).Info("task cancelled", "task", ec.TaskID)
	return func(func(a2a.Event, error) bool) {}
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return l
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, p := range m.Parts {
		if t := p.Text(); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}
