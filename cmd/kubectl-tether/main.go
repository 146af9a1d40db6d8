/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command kubectl-tether is a kubectl plugin for tether Delegations: draw a
// task tree (once, live, as a graph, or in a local web view), read a result, reply to a task that asks for input, cancel one,
// wait for a tree to settle, list its events, and describe its lease and
// budget ledger. It takes kubectl's own connection flags (cli-runtime).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Exit codes. A CI job can tell them apart; `wait` adds its own (see wait.go).
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed: not found, refused, API error
	exitUsage   = 2 // the command line is wrong; nothing was sent
)

func main() {
	// controller-runtime's client logs through its own logger; the plugin
	// reports errors itself (and a long wait must not print a warning that no
	// logger was set).
	logf.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "error:", err)
	var usage usageError
	var exit codedError
	switch {
	case errors.As(err, &usage) || isCobraUsageError(err):
		fmt.Fprintf(stderr, "\nUsage:\n  %s\n\nSee '%s --help' for the flags and examples.\n", cmd.UseLine(), cmd.CommandPath())
		return exitUsage
	case errors.As(err, &exit):
		return exit.code
	default:
		return exitFailure
	}
}

// usageError is a command line that cannot run: it exits 2 with the usage.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// codedError carries an exit code of its own (wait's outcomes).
type codedError struct {
	error
	code int
}

func (e codedError) Unwrap() error { return e.error }
