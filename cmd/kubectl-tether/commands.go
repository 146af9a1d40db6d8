/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func treeCmd(ctx context.Context, e *env, args []string) error {
	list := &v1alpha1.DelegationList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return err
	}
	tops := roots(list.Items)
	if len(args) == 1 {
		root := args[0]
		tops = nil
		for _, d := range list.Items {
			if d.Name == root {
				tops = append(tops, d)
			}
		}
		if len(tops) == 0 {
			return fmt.Errorf("delegation %q not found in namespace %q", root, e.ns)
		}
	}
	if len(tops) == 0 {
		fmt.Fprintf(e.stderr, "No Delegations in namespace %q.\n", e.ns)
		return nil
	}
	_, err := io.WriteString(e.stdout, renderTree(tops, childrenByParent(list.Items), e.now, e.color))
	return err
}

func describeCmd(ctx context.Context, e *env, args []string) error {
	d := &v1alpha1.Delegation{}
	if err := e.c.Get(ctx, e.key(args[0]), d); err != nil {
		return err
	}
	_, err := io.WriteString(e.stdout, renderDescribe(d, e.now, e.color))
	return err
}

func resultCmd(ctx context.Context, e *env, args []string) error {
	d := &v1alpha1.Delegation{}
	if err := e.c.Get(ctx, e.key(args[0]), d); err != nil {
		return err
	}
	out, err := renderResult(d)
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

func replyCmd(ctx context.Context, e *env, args []string) error {
	d, err := appendReply(ctx, e.c, e.key(args[0]), args[1])
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, replyNote(d))
	return nil
}

func cancelCmd(ctx context.Context, e *env, args []string) error {
	msg, err := cancelDelegation(ctx, e.c, e.key(args[0]))
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}
