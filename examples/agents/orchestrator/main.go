/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command orchestrator is a sample A2A agent that fans a task out to worker
// agents through child Delegations (agentkit.Delegate), splits its budget
// among them, waits for all and completes with a summary. It must be sent
// tasks by the tether operator, which names the current Delegation in the
// message metadata, and it needs a kubeconfig (-kubeconfig or KUBECONFIG) to
// create the children.
//
// Words in the message text:
//
//	fanout=N   create N children instead of -fanout
//
// The whole text is passed on to every child, so worker words (ask, fail,
// steps=N, ...) reach the workers. A child that waits for input is waited on
// until someone replies to it; a child that did not succeed fails the
// orchestrator's task with that child's failure class.
//
// Flags: -listen, -name, -worker-agent, -fanout, -child-lease,
// -child-timeout, -kubeconfig. It prints "listening on <url>" once it
// accepts requests.
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
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/pkg/agentkit"
)

type orchestrator struct {
	kube         client.Client
	workerAgent  string
	fanout       int
	childLease   time.Duration
	childTimeout time.Duration
	log          *slog.Logger
}

func (o *orchestrator) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		parent, fromOperator := agentkit.DelegationFrom(ctx)
		o.log.Info("task received", "task", ec.TaskID, "delegation", parent.String())
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !fromOperator {
			yield(agentkit.FailEvent(ec, v1alpha1.FailureInvalidRequest,
				"the orchestrator only takes tasks from a Delegation"), nil)
			return
		}
		text := textOf(ec.Message)
		n := fanoutOf(text, o.fanout)

		// Each child gets an equal share of what is left; the kit holds it.
		budget := agentkit.BudgetFrom(ctx)
		var share map[string]int64
		if left := budget.Left(); left != nil {
			share = map[string]int64{}
			for m, v := range left {
				share[m] = v / int64(n)
			}
		}
		keys := make([]client.ObjectKey, 0, n)
		for i := range n {
			key, err := agentkit.DelegateAsync(ctx, o.kube, agentkit.DelegateRequest{
				Key:     fmt.Sprintf("part-%d", i+1),
				Agent:   o.workerAgent,
				Text:    fmt.Sprintf("%s (part %d of %d)", text, i+1, n),
				Budget:  share,
				Lease:   o.childLease,
				Timeout: o.childTimeout,
			})
			if err != nil {
				class := v1alpha1.FailureTransient
				if errors.Is(err, agentkit.ErrBudgetExhausted) {
					class = v1alpha1.FailureBudgetExhausted
				}
				yield(agentkit.FailEvent(ec, class, err.Error()), nil)
				return
			}
			keys = append(keys, key)
		}
		if !yield(status(ec, a2a.TaskStateWorking, fmt.Sprintf("delegated %d parts to %s", n, o.workerAgent)), nil) {
			return
		}

		var lines []string
		var failed *agentkit.Outcome
		for i, key := range keys {
			out, err := o.waitSettled(ctx, key)
			if ctx.Err() != nil {
				o.log.Info("task stopped", "task", ec.TaskID, "cause", context.Cause(ctx))
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
func (o *orchestrator) waitSettled(ctx context.Context, key client.ObjectKey) (*agentkit.Outcome, error) {
	for {
		out, err := agentkit.Wait(ctx, o.kube, key)
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
func (o *orchestrator) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	o.log.Info("task cancelled", "task", ec.TaskID)
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o := &orchestrator{log: log}
	listen := flag.String("listen", "127.0.0.1:9102", "address to serve on")
	name := flag.String("name", "orchestrator", "agent name on the card")
	flag.StringVar(&o.workerAgent, "worker-agent", "worker", "Agent (in the task's namespace) the parts are delegated to")
	flag.IntVar(&o.fanout, "fanout", 3, "children per task")
	flag.DurationVar(&o.childLease, "child-lease", 0, "lease TTL asked for each child; 0 for none")
	flag.DurationVar(&o.childTimeout, "child-timeout", 0, "wall-clock limit of each child; 0 for none")
	flag.Parse() // -kubeconfig is registered by controller-runtime

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		log.Error("building scheme failed", "error", err)
		os.Exit(1)
	}
	cfg, err := config.GetConfig()
	if err != nil {
		log.Error("no kubeconfig", "error", err)
		os.Exit(1)
	}
	if o.kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		log.Error("building client failed", "error", err)
		os.Exit(1)
	}

	card := &a2a.AgentCard{
		Name:               *name,
		Description:        "Sample orchestrator: splits a task among workers through child Delegations.",
		Version:            "0.1.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID: "fanout", Name: "Fan out", Tags: []string{"sample"},
			Description: "Delegates the message to fanout=N workers and summarises their results.",
		}},
	}
	srv := agentkit.NewServer(card, o, agentkit.WithLogger(log))
	defer srv.Close()
	if err := serve(*listen, *name, srv, log); err != nil {
		log.Error("serving failed", "error", err)
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
