/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command worker serves the sample worker agent (sample.Worker) on
// agentkit. It works through a number of steps, charging its budget for each,
// and honours leases, budget deadlines and cancellation.
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
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/pkg/agentkit"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w := sample.Worker{Log: log}
	listen := flag.String("listen", "127.0.0.1:9101", "address to serve on")
	flag.StringVar(&w.Name, "name", "worker", "agent name on the card")
	flag.IntVar(&w.Steps, "steps", 3, "steps per task")
	flag.DurationVar(&w.Delay, "step-delay", 500*time.Millisecond, "time each step takes")
	flag.Int64Var(&w.Spend, "spend", 100, "units of -meter charged per step")
	flag.StringVar(&w.Meter, "meter", sample.DefaultMeter, "budget meter the steps are charged to")
	flag.BoolVar(&w.FailAll, "fail", false, "fail every task after its first step")
	maxTTL := flag.Duration("max-lease-ttl", time.Hour, "longest lease granted")
	flag.Parse()

	srv := agentkit.NewServer(sample.WorkerCard(w.Name), w, agentkit.WithMaxLeaseTTL(*maxTTL), agentkit.WithLogger(log))
	defer srv.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sample.Serve(ctx, *listen, w.Name, srv, log); err != nil {
		log.Error("serving failed", "error", err)
		stop()
		srv.Close()
		os.Exit(1)
	}
}
