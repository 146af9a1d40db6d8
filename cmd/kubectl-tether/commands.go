/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/version"
)

// where names the namespace a listing looked in, for messages.
func (e *env) where() string {
	if e.allNamespaces {
		return "in any namespace"
	}
	return fmt.Sprintf("in namespace %q", e.ns)
}

func named(items []v1alpha1.Delegation, name string) []v1alpha1.Delegation {
	var out []v1alpha1.Delegation
	for _, d := range items {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// treeOrder lists the Delegations under roots depth first, as the tree draws them.
func treeOrder(tops []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation) []v1alpha1.Delegation {
	var out []v1alpha1.Delegation
	seen := map[string]bool{}
	var walk func(d v1alpha1.Delegation)
	walk = func(d v1alpha1.Delegation) {
		k := treeKey(d.Namespace, d.Name)
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, d)
		for _, c := range children[k] {
			walk(c)
		}
	}
	for _, d := range tops {
		walk(d)
	}
	return out
}

// delegationList wraps items for a printer, each with its kind, as kubectl prints lists.
func delegationList(items []v1alpha1.Delegation) *v1alpha1.DelegationList {
	list := &v1alpha1.DelegationList{Items: items}
	for i := range list.Items {
		list.Items[i].APIVersion = v1alpha1.GroupVersion.String()
		list.Items[i].Kind = kindDelegation
	}
	return list
}

func newDescribeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:               "describe NAME",
		Short:             "Show phase, outcome, lease and budget ledger",
		Args:              exactArgs(1),
		ValidArgsFunction: completeDelegations(o),
		RunE:              o.runner(describeCmd),
	}
}

func describeCmd(ctx context.Context, e *env, args []string) error {
	d := &v1alpha1.Delegation{}
	if err := e.c.Get(ctx, e.key(args[0]), d); err != nil {
		return err
	}
	var agent *v1alpha1.Agent
	if key, ok := d.AgentKey(); ok {
		a := &v1alpha1.Agent{}
		if e.c.Get(ctx, key, a) == nil {
			agent = a
		}
	}
	out := renderDescribe(d, e.now, e.color) + describeAgentCard(agent) + describeAgentConformance(agent) + describeShard(ctx, e, d.Namespace)
	_, err := io.WriteString(e.stdout, out)
	return err
}

func newResultCommand(o *options) *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "result NAME",
		Short: "Print the result text and artifacts",
		Long: `Print the result text and artifacts.

Control characters in the agent's text are shown as visible escapes (ESC as ^[),
so a result cannot rewrite the terminal. --raw prints the bytes as the agent sent
them, for pipes and files.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the result exactly as the agent sent it (no escaping)")
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		e.raw = raw
		return resultCmd(ctx, e, args)
	})
	return cmd
}

func resultCmd(ctx context.Context, e *env, args []string) error {
	d := &v1alpha1.Delegation{}
	if err := e.c.Get(ctx, e.key(args[0]), d); err != nil {
		return err
	}
	out, err := renderResult(d, e.raw)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(e.stdout, out); err != nil {
		return err
	}
	if d.Status.Result.Truncated {
		fmt.Fprintln(e.stderr, "note: the result was cut to fit in the Delegation's status")
	}
	return nil
}

func newCancelCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:               "cancel NAME",
		Short:             "Cancel the task (and its Cancel-policy children)",
		Args:              exactArgs(1),
		ValidArgsFunction: completeDelegations(o),
		RunE:              o.runner(cancelCmd),
	}
}

func cancelCmd(ctx context.Context, e *env, args []string) error {
	msg, err := cancelDelegation(ctx, e.c, e.key(args[0]))
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

func newVersionCommand(o *options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and build date",
		Args:  exactArgs(0),
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintln(o.stdout, "kubectl-tether", info)
				return err
			case "json":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(o.stdout, string(b))
				return err
			case "yaml":
				b, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				_, err = o.stdout.Write(b)
				return err
			default:
				return usagef("unknown output format %q: use json or yaml", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml")
	return cmd
}

// listing gives a command that lists objects the -o flags and runs it with
// the chosen printer: one way for every listing command.
func (o *options) listing(cmd *cobra.Command, run func(context.Context, *env, []string) error) *cobra.Command {
	out := addOutputFlags(cmd)
	cmd.PreRunE = func(*cobra.Command, []string) error { return out.validate() }
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		e.output = out
		return run(ctx, e, args)
	})
	return cmd
}
