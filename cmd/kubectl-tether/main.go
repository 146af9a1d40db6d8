/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command kubectl-tether is a kubectl plugin for tether Delegations: draw a
// task tree, read a result, reply to a task that asks for input, cancel one,
// and describe its lease and budget ledger.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const usage = `kubectl tether: follow and steer tether Delegations.

Usage:
  kubectl tether tree [NAME]        draw the delegation tree under NAME (all trees without NAME)
  kubectl tether describe NAME      phase, outcome, lease and budget ledger
  kubectl tether result NAME        print the result text and artifacts
  kubectl tether reply NAME TEXT    append a reply for a task that asks for input
  kubectl tether cancel NAME        cancel the task (and its Cancel-policy children)

Flags:
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kube kubeFlags
	var noColor bool
	fs := pflag.NewFlagSet("kubectl-tether", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	kube.register(fs)
	fs.BoolVar(&noColor, "no-color", false, "never colour the output (colour is used only on a terminal)")
	fs.Usage = func() { fmt.Fprint(stderr, usage+fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	cmd, err := parseCommand(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		fs.Usage()
		return 2
	}
	c, ns, err := kube.connect()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	env := &env{c: c, ns: ns, stdout: stdout, stderr: stderr, now: time.Now(), color: useColor(stdout, noColor)}
	if err := cmd(ctx, env); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// env is what a command runs against.
type env struct {
	c              client.Client
	ns             string
	stdout, stderr io.Writer
	now            time.Time
	color          bool
}

func (e *env) key(name string) client.ObjectKey { return client.ObjectKey{Namespace: e.ns, Name: name} }

// command is one subcommand and how many arguments it takes.
type command struct {
	minArgs, maxArgs int
	run              func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]command{
	"tree":     {0, 1, treeCmd},
	"describe": {1, 1, describeCmd},
	"result":   {1, 1, resultCmd},
	"reply":    {2, 2, replyCmd},
	"cancel":   {1, 1, cancelCmd},
}

// parseCommand checks the arguments before anything talks to the cluster.
func parseCommand(args []string) (func(context.Context, *env) error, error) {
	if len(args) == 0 {
		return nil, errors.New("no command given")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return nil, fmt.Errorf("unknown command %q", args[0])
	}
	rest := args[1:]
	if len(rest) < cmd.minArgs || len(rest) > cmd.maxArgs {
		return nil, fmt.Errorf("wrong number of arguments for %s", args[0])
	}
	return func(ctx context.Context, e *env) error { return cmd.run(ctx, e, rest) }, nil
}

// useColor colours only a terminal, and never when asked not to (--no-color,
// NO_COLOR, TERM=dumb).
func useColor(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
