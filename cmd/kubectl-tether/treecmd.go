/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func newTreeCommand(o *options) *cobra.Command {
	var watch bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "tree [NAME]",
		Short: "Draw the delegation tree under NAME (every tree without NAME)",
		Long: `Draw the delegation tree under NAME (every tree in the namespace without NAME).

--watch redraws the tree as phases, budgets and leases change, and exits when
it settles, with the exit codes of wait (0 every Delegation succeeded, 3 one
failed, was canceled or detached, 4 --timeout passed, 5 one waits for input).

-o dot and -o mermaid print the tree as a Graphviz or Mermaid graph, for docs
and reviews.`,
		Example: `  kubectl tether tree research
  kubectl tether tree research --watch
  kubectl tether tree -A -o wide
  kubectl tether tree research -o yaml
  kubectl tether tree research -o mermaid
  kubectl tether tree research -o dot | dot -Tsvg > research.svg`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "redraw as the tree changes; exit when it settles, with wait's exit codes")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --watch: give up after this long (exit code 4; 0: follow for ever)")
	out := addOutputFlags(cmd)
	out.graphs = true
	cmd.Flag("output").Usage = "Output format: one of (json, yaml, name, wide, dot, mermaid, jsonpath=..., go-template=...). Default: the table."
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch {
		case watch && !out.human():
			return usagef("--watch draws the table: use it without -o or with -o wide")
		case timeout < 0:
			return usagef("--timeout must not be negative")
		case timeout > 0 && !watch:
			return usagef("--timeout is for --watch")
		}
		return out.validate()
	}
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		e.output = out
		if !watch {
			return treeCmd(ctx, e, args)
		}
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return watchTree(ctx, e, args)
	})
	return cmd
}

func treeCmd(ctx context.Context, e *env, args []string) error {
	list := &v1alpha1.DelegationList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.listNamespace())); err != nil {
		return err
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	tops, children, err := e.trees(list.Items, name)
	if err != nil {
		return err
	}
	switch {
	case e.output.graph() != "":
		_, err := io.WriteString(e.stdout, renderGraph(e.output.graph(), tops, children, e.allNamespaces))
		return err
	case !e.output.human():
		return e.output.printObject(delegationList(treeOrder(tops, children)), e.stdout)
	case len(tops) == 0:
		fmt.Fprintf(e.stderr, "No Delegations %s.\n", e.where())
		return nil
	}
	_, err = io.WriteString(e.stdout, e.treeView().render(tops, children))
	return err
}

// trees picks the trees to draw from every Delegation listed: the one under
// name, or all of them without a name.
func (e *env) trees(items []v1alpha1.Delegation, name string) (tops []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation, err error) {
	tops = roots(items)
	if name != "" {
		tops = named(items, name)
		if len(tops) == 0 {
			return nil, nil, fmt.Errorf("delegation %q not found %s", name, e.where())
		}
	}
	return tops, childrenByParent(items), nil
}

func (e *env) treeView() treeView {
	return treeView{now: e.now, color: e.color, wide: e.output.wide(), namespaces: e.allNamespaces}
}
