/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command worker is a sample A2A agent built on agentkit. It works through a
// number of steps, charging its budget for each, and honours leases, budget
// deadlines and cancellation.
//
// Words in the message text drive it, so a demo can pick behaviour per task:
//
//	ask        ask for input first (input-required); the reply, sent to the
//	           same task, is worked on and quoted in the result
//	fail       fail after the first step (failure class Internal)
//	refuse     fail at once (failure class PolicyRefusal)
//	forever    keep working until cancelled, or the lease or deadline ends it
//	steps=N    do N steps instead of -steps
//	delay=D    wait D (a Go duration) per step instead of -step-delay
//	spend=N    charge N per step instead of -spend
//
// Flags: -listen, -name, -steps, -step-delay, -spend, -meter, -fail,
// -max-lease-ttl. It prints "listening on <url>" once it accepts requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/pkg/agentkit"
)

type worker struct {
	name    string
	steps   int
	delay   time.Duration
	spend   int64
	meter   string
	failAll bool
	log     *slog.Logger
}

// plan is what one task asks for.
type plan struct {
	ask, fail, refuse, forever bool
	steps                      int
	delay                      time.Duration
	spend                      int64
}

func (w *worker) plan(text string) plan {
	p := plan{steps: w.steps, delay: w.delay, spend: w.spend, fail: w.failAll}
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

func (w *worker) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		// A reply continues a task that asked for input; its first message
		// still says what to do.
		reply := ""
		text := textOf(ec.Message)
		if ec.StoredTask != nil && len(ec.StoredTask.History) > 0 {
			reply, text = text, textOf(ec.StoredTask.History[0])
		}
		d, _ := agentkit.DelegationFrom(ctx)
		w.log.Info("task received", "task", ec.TaskID, "delegation", d.String(), "reply", reply != "")
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
			if err := budget.Charge(w.meter, p.spend); err != nil {
				yield(nil, err) // the kit fails the task with BudgetExhausted
				return
			}
			note := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(fmt.Sprintf("step %d", i+1)))
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, note), nil) {
				return
			}
			select {
			case <-ctx.Done():
				w.log.Info("task stopped", "task", ec.TaskID, "cause", context.Cause(ctx))
				return
			case <-time.After(p.delay):
			}
			if p.fail {
				yield(agentkit.FailEvent(ec, v1alpha1.FailureInternal, fmt.Sprintf("failed at step %d as asked", i+1)), nil)
				return
			}
		}

		result := fmt.Sprintf("%s did %d steps for: %s", w.name, p.steps, text)
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
func (w *worker) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	w.log.Info("task cancelled", "task", ec.TaskID)
	return func(func(a2a.Event, error) bool) {}
}

func main() {
	w := &worker{log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	listen := flag.String("listen", "127.0.0.1:9101", "address to serve on")
	flag.StringVar(&w.name, "name", "worker", "agent name on the card")
	flag.IntVar(&w.steps, "steps", 3, "steps per task")
	flag.DurationVar(&w.delay, "step-delay", 500*time.Millisecond, "time each step takes")
	flag.Int64Var(&w.spend, "spend", 100, "units of -meter charged per step")
	flag.StringVar(&w.meter, "meter", "tokens", "budget meter the steps are charged to")
	flag.BoolVar(&w.failAll, "fail", false, "fail every task after its first step")
	maxTTL := flag.Duration("max-lease-ttl", time.Hour, "longest lease granted")
	flag.Parse()

	card := &a2a.AgentCard{
		Name:               w.name,
		Description:        "Sample worker: does a few steps and reports what it spent.",
		Version:            "0.1.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID: "work", Name: "Work", Tags: []string{"sample"},
			Description: "Works through steps; message words ask, fail, refuse, forever, steps=N, delay=D, spend=N change how.",
		}},
	}
	srv := agentkit.NewServer(card, w, agentkit.WithMaxLeaseTTL(*maxTTL), agentkit.WithLogger(w.log))
	defer srv.Close()

	if err := serve(*listen, w.name, srv, w.log); err != nil {
		w.log.Error("serving failed", "error", err)
		os.Exit(1)
	}
}

// serve prints the line demos wait for, then serves until SIGINT or SIGTERM.
func serve(addr, name string, h http.Handler, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		log.Info("shutting down")
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	fmt.Printf("%s listening on http://%s\n", name, ln.Addr())
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
