/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tether-dev/tether/internal/ui"
)

func newUICommand(o *options) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a live, read-only web view of the delegation trees on 127.0.0.1",
		Long: `Serve a live, read-only web view of every delegation tree in the namespace
(with -A, in every namespace) on 127.0.0.1, until interrupted.

The view watches Delegations and their Events with your kubeconfig, as the
other commands do: it needs no new permissions in the cluster and can change
nothing. The page, its script and styles are built into the plugin and load
nothing from the network. The address printed carries a secret path, so other
users of the machine cannot read the cluster through it with your credentials.`,
		Example: `  kubectl tether ui
  kubectl tether ui -A --port 8765`,
		Args: exactArgs(0),
	}
	cmd.Flags().IntVar(&port, "port", 0, "port on 127.0.0.1 to serve on (0: any free port)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if port < 0 || port > 65535 {
			return usagef("--port must be between 0 and 65535")
		}
		return nil
	}
	cmd.RunE = o.runner(func(ctx context.Context, e *env, _ []string) error {
		return serveUI(ctx, e, port)
	})
	return cmd
}

func serveUI(ctx context.Context, e *env, port int) error {
	srv, err := ui.New(e.c, e.listNamespace())
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }()
	what := fmt.Sprintf("namespace %q", e.ns)
	if e.allNamespaces {
		what = "every namespace"
	}
	fmt.Fprintf(e.stdout, "Serving the delegation trees of %s, read-only, at\n  http://%s%s\nPress Ctrl-C to stop.\n",
		what, ln.Addr(), srv.Path())
	return srv.Serve(ctx, ln)
}
