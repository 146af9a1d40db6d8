/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Exit codes of `wait`, for CI jobs (documented in docs/kubectl-plugin.md).
const (
	exitWaitFailed  = 3 // a Delegation ended without success (kstatus Failed, or Detached)
	exitWaitTimeout = 4 // --timeout passed first
	exitWaitInput   = 5 // a Delegation waits for a person (InputRequired, AuthRequired)
)

func newWaitCommand(o *options) *cobra.Command {
	var timeout time.Duration
	var tree, all bool
	cmd := &cobra.Command{
		Use:   "wait [NAME]",
		Short: "Wait until a Delegation (--tree: and everything under it) is Current or Failed",
		Long: `Wait until a Delegation, or a whole tree, settles, as kstatus sees it.

A Delegation is done waiting when kstatus says Current (it succeeded) or Failed
(Failed, Canceled), or when it stopped for something wait cannot give: a person's
input (InputRequired, AuthRequired) or nobody following it (Detached).

Exit codes:
  0  every Delegation succeeded
  1  an error: not found, deleted while waiting, API error
  2  the command line is wrong
  3  at least one failed, was canceled or detached
  4  --timeout passed first
  5  at least one waits for input (none failed)`,
		Example: `  kubectl tether wait research --tree --timeout 10m
  kubectl tether wait --all -n team-a`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long (0: wait for ever)")
	cmd.Flags().BoolVar(&tree, "tree", false, "also wait for every Delegation under NAME")
	cmd.Flags().BoolVar(&all, "all", false, "wait for every Delegation in the namespace (with -A: in every namespace)")
	cmd.PreRunE = func(_ *cobra.Command, args []string) error {
		switch {
		case all && len(args) > 0:
			return usagef("give a NAME or --all, not both")
		case !all && len(args) == 0:
			return usagef("wait needs a NAME or --all")
		case timeout < 0:
			return usagef("--timeout must not be negative")
		}
		return nil
	}
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		w := waiter{e: e, tree: tree}
		if len(args) == 1 {
			w.name = args[0]
		}
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return w.run(ctx)
	})
	return cmd
}

type waiter struct {
	e    *env
	name string // "" with --all
	tree bool
	// seen, when set, is given every state of the Delegations the watch
	// delivers, before it is judged (tree --watch draws it).
	seen func(items []v1alpha1.Delegation)
	// quiet leaves out the closing report (tree --watch drew the tree instead).
	quiet bool
}

// verdict is where one Delegation stands for wait.
type verdict int

const (
	waiting verdict = iota
	succeeded
	needsInput
	failed
)

// judge reads one Delegation by kstatus, plus what kstatus cannot tell: a
// Delegation the operator has not seen yet has no conditions, which kstatus
// reads as Current; and a task handed to a person or detached never becomes
// Current on its own.
func judge(d *v1alpha1.Delegation) (verdict, error) {
	if d.Status.Phase == "" || d.Status.ObservedGeneration == 0 {
		return waiting, nil
	}
	switch d.Status.Phase {
	case v1alpha1.PhaseInputRequired, v1alpha1.PhaseAuthRequired:
		return needsInput, nil
	case v1alpha1.PhaseDetached:
		return failed, nil
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return waiting, err
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		return waiting, err
	}
	switch res.Status {
	case status.CurrentStatus:
		return succeeded, nil
	case status.FailedStatus:
		return failed, nil
	}
	return waiting, nil
}

// targets picks, from every Delegation in the store, the ones waited for.
func (w *waiter) targets(items []v1alpha1.Delegation) ([]v1alpha1.Delegation, error) {
	if w.name == "" {
		return items, nil
	}
	tops := named(items, w.name)
	if len(tops) == 0 {
		return nil, fmt.Errorf("delegation %q not found %s", w.name, w.e.where())
	}
	if !w.tree {
		return tops, nil
	}
	return treeOrder(tops, childrenByParent(items)), nil
}

// check decides whether waiting is over: every target judged, none waiting.
func (w *waiter) check(items []v1alpha1.Delegation) (done bool, worst verdict, err error) {
	targets, err := w.targets(items)
	if err != nil {
		return false, 0, err
	}
	worst = succeeded
	for i := range targets {
		v, err := judge(&targets[i])
		if err != nil {
			return false, 0, err
		}
		if v == waiting {
			return false, 0, nil
		}
		worst = max(worst, v)
	}
	return true, worst, nil
}

// run watches the Delegations (a list, then a watch, re-listed when the watch
// breaks) and returns when check says so or the context ends.
func (w *waiter) run(ctx context.Context) error {
	ns := w.e.listNamespace()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &v1alpha1.DelegationList{}
			return list, w.e.c.List(ctx, list, &client.ListOptions{Namespace: ns, Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return w.e.c.Watch(ctx, &v1alpha1.DelegationList{}, &client.ListOptions{Namespace: ns, Raw: &opts})
		},
	}
	var store cache.Store
	var worst verdict
	evaluate := func() (bool, error) {
		objs := store.List()
		items := make([]v1alpha1.Delegation, 0, len(objs))
		for _, obj := range objs {
			items = append(items, *obj.(*v1alpha1.Delegation))
		}
		if w.seen != nil {
			w.seen(items)
		}
		done, v, err := w.check(items)
		worst = v
		return done, err
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &v1alpha1.Delegation{},
		func(s cache.Store) (bool, error) {
			store = s
			return evaluate()
		},
		func(ev watch.Event) (bool, error) {
			if ev.Type == watch.Deleted && w.name != "" {
				if d, ok := ev.Object.(*v1alpha1.Delegation); ok && d.Name == w.name {
					return false, fmt.Errorf("delegation %q was deleted while waiting", w.name)
				}
			}
			return evaluate()
		})
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return codedError{fmt.Errorf("timed out waiting for %s", w.subject()), exitWaitTimeout}
	case err != nil:
		return err
	}
	if !w.quiet {
		w.report(store)
	}
	switch worst {
	case failed:
		return codedError{fmt.Errorf("%s did not succeed", w.subject()), exitWaitFailed}
	case needsInput:
		return codedError{fmt.Errorf("%s waits for input", w.subject()), exitWaitInput}
	}
	return nil
}

func (w *waiter) subject() string {
	if w.name == "" {
		return "the Delegations " + w.e.where()
	}
	if w.tree {
		return fmt.Sprintf("the tree under %q", w.name)
	}
	return fmt.Sprintf("delegation %q", w.name)
}

// report prints each target with its phase, as it ended.
func (w *waiter) report(store cache.Store) {
	objs := store.List()
	items := make([]v1alpha1.Delegation, 0, len(objs))
	for _, obj := range objs {
		items = append(items, *obj.(*v1alpha1.Delegation))
	}
	targets, err := w.targets(items)
	if err != nil {
		return
	}
	if w.name == "" {
		slices.SortStableFunc(targets, olderFirst)
	}
	for _, d := range targets {
		line := fmt.Sprintf("delegation/%s %s", escapeLine(d.Name), phaseOf(&d))
		if r := reasonOf(&d); r != none {
			line += " (" + escapeLine(r) + ")"
		}
		if w.e.allNamespaces {
			line = d.Namespace + " " + line
		}
		fmt.Fprintln(w.e.stdout, line)
	}
}
