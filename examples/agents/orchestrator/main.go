/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command orchestrator serves the sample orchestrator agent
// (sample.Orchestrator) on agentkit. It fans a task out to worker agents
// through child Delegations, splits its budget among them, waits for all and
// completes with a summary. It must be sent tasks by the tether operator,
// which names the current Delegation in the message metadata, and it needs a
// kubeconfig (-kubeconfig or KUBECONFIG) to create the children.
//
// Words in the message text:
//
//	fanout=N   create N children instead of -fanout
//
// The whole text is passed on to every child, so worker words (ask, fail,
// steps=N, ...) reach the workers.
//
// It creates children only for a Delegation whose Agent's endpoint is at one
// of its own origins: -origins lists them (comma-separated, every
// scheme://host[:port] Agents use for it), by default http://<-listen>.
//
// Flags: -listen, -origins, -name, -worker-agent, -fanout, -child-lease,
// -child-timeout, -spend, -meter, -kubeconfig. It prints "listening on <url>"
// once it accepts requests.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/pkg/agentkit"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o := sample.Orchestrator{Log: log}
	listen := flag.String("listen", "127.0.0.1:9102", "address to serve on")
	origins := flag.String("origins", "", "comma-separated origins (scheme://host[:port]) Agents reach this agent at; default http://<listen>")
	name := flag.String("name", "orchestrator", "agent name on the card")
	flag.StringVar(&o.WorkerAgent, "worker-agent", "worker", "Agent (in the task's namespace) the parts are delegated to")
	flag.IntVar(&o.Fanout, "fanout", sample.DefaultFanout, "children per task")
	flag.DurationVar(&o.ChildLease, "child-lease", 0, "lease TTL asked for each child; 0 for none")
	flag.DurationVar(&o.ChildTimeout, "child-timeout", 0, "wall-clock limit of each child; 0 for none")
	flag.Int64Var(&o.Spend, "spend", 0, "units of -meter charged per task for the orchestrator's own planning")
	flag.StringVar(&o.Meter, "meter", sample.DefaultMeter, "budget meter -spend is charged to")
	audience := flag.String("token-audience", "",
		"authenticate callers with TokenReview: their bearer token must be bound to this audience "+
			"(the Agents' spec.auth.serviceAccountToken.audience); empty: no authentication")
	operator := flag.String("operator", "",
		"the operator's user name (system:serviceaccount:<namespace>:<name>): claims are proven only from it; needs -token-audience")
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
	if o.Kube, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		log.Error("building client failed", "error", err)
		os.Exit(1)
	}

	own := *origins
	if own == "" {
		own = "http://" + *listen
	}
	opts := []agentkit.Option{agentkit.WithLogger(log), agentkit.WithOrigins(strings.Split(own, ",")...)}
	if *audience != "" {
		core, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			log.Error("building client failed", "error", err)
			os.Exit(1)
		}
		opts = append(opts, agentkit.WithTokenReview(core.AuthenticationV1().TokenReviews(), *audience))
	}
	if *operator != "" {
		opts = append(opts, agentkit.WithOperator(*operator))
	}
	srv := agentkit.NewServer(sample.OrchestratorCard(*name), o, opts...)
	defer srv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sample.Serve(ctx, *listen, *name, srv, log); err != nil {
		log.Error("serving failed", "error", err)
		stop()
		srv.Close()
		os.Exit(1)
	}
}
