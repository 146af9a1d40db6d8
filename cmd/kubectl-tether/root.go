/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/version"
)

// options are the flags every command shares: kubectl's connection flags
// (--kubeconfig, --context, -n, --as, --request-timeout, ...) and ours.
type options struct {
	config        *genericclioptions.ConfigFlags
	allNamespaces bool
	noColor       bool
	stdout        io.Writer
	stderr        io.Writer
}

// env is what a command runs against.
type env struct {
	c              client.WithWatch
	ns             string
	allNamespaces  bool
	stdout, stderr io.Writer
	now            time.Time
	color          bool
	output         *outputFlags // -o of a listing command; nil prints the table
	raw            bool         // result --raw
}

func (e *env) key(name string) client.ObjectKey { return client.ObjectKey{Namespace: e.ns, Name: name} }

// listNamespace is where a listing command looks: "" (every namespace) with -A.
func (e *env) listNamespace() string {
	if e.allNamespaces {
		return ""
	}
	return e.ns
}

// connect builds the client from the connection flags, the way kubectl does.
func (o *options) connect() (*env, error) {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace from kubeconfig: %w", err)
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubectl-tether/" + version.Get().Version
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := addEventsToScheme(scheme); err != nil {
		return nil, err
	}
	if err := coordinationv1.AddToScheme(scheme); err != nil { // shard Leases
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &env{c: c, ns: ns, allNamespaces: o.allNamespaces, stdout: o.stdout, stderr: o.stderr,
		now: time.Now(), color: useColor(o.stdout, o.noColor)}, nil
}

// runner turns a command body into a cobra RunE that connects first.
func (o *options) runner(body func(ctx context.Context, e *env, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		e, err := o.connect()
		if err != nil {
			return err
		}
		return body(cmd.Context(), e, args)
	}
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "kubectl-tether",
		Short: "Follow and steer tether Delegations",
		Long: `kubectl tether: follow and steer tether Delegations.

Every command takes kubectl's connection flags (--kubeconfig, --context, -n,
--as, --request-timeout, ...). Listing commands take -A and -o json|yaml|name|wide.`,
		Annotations: map[string]string{
			// kubectl shows plugin commands as "kubectl tether ..." in help.
			cobra.CommandDisplayNameAnnotation: "kubectl tether",
		},
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(*cobra.Command, []string) error {
			return usagef("no command given")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	flags := root.PersistentFlags()
	o.config.AddFlags(flags)
	flags.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"list across every namespace (tree, events, wait without a name)")
	flags.BoolVar(&o.noColor, "no-color", false, "never colour the output (colour is used only on a terminal)")
	registerNameCompletion(root, o)

	root.AddCommand(
		newTreeCommand(o),
		newDescribeCommand(o),
		newResultCommand(o),
		newReplyCommand(o),
		newCancelCommand(o),
		newApproveCommand(o),
		newDenyCommand(o),
		newWaitCommand(o),
		newEventsCommand(o),
		newShardsCommand(o),
		newQuotaCommand(o),
		newUICommand(o),
		newVersionCommand(o),
		newCheckAgentCommand(o),
	)
	return root
}

// exactArgs and rangeArgs refuse a wrong count before anything talks to the
// cluster, with the message the plugin always gave.
func rangeArgs(minArgs, maxArgs int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minArgs || len(args) > maxArgs {
			return usagef("wrong number of arguments for %s", cmd.Name())
		}
		return nil
	}
}

func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }

// isCobraUsageError recognises cobra's own refusals of a command line.
func isCobraUsageError(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// useColor colours only a terminal, and never when asked not to (--no-color,
// NO_COLOR, TERM=dumb).
func useColor(w io.Writer, noColor bool) bool {
	return !noColor && printers.AllowsColorOutput(w)
}
