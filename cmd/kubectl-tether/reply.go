/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// appendReply appends text to spec.replies. The merge patch carries the
// resourceVersion it was computed from, so the API server refuses it with a
// Conflict when someone else appended in between; we then read again and
// append to the fresh list, and no reply is ever lost or reordered.
func appendReply(ctx context.Context, c client.Client, key client.ObjectKey, text string) (*v1alpha1.Delegation, error) {
	d := &v1alpha1.Delegation{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, d); err != nil {
			return err
		}
		if err := replyAllowed(d); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
		d.Spec.Replies = append(d.Spec.Replies, text)
		return c.Patch(ctx, d, patch)
	})
	return d, err
}

// replyAllowed refuses replies that could never be sent.
func replyAllowed(d *v1alpha1.Delegation) error {
	if d.Spec.AgentRef == nil {
		return fmt.Errorf("delegation %q is a group: replies go to one of its tasks", d.Name)
	}
	switch d.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseCanceled, v1alpha1.PhaseDetached:
		return fmt.Errorf("delegation %q is %s: a reply would never be sent", d.Name, d.Status.Phase)
	}
	// The operator cancels or lets go of such a task before it sends anything.
	if d.Spec.Cancel {
		return fmt.Errorf("delegation %q is being cancelled: a reply would never be sent", d.Name)
	}
	if d.Spec.Detach {
		return fmt.Errorf("delegation %q is being detached: a reply would never be sent", d.Name)
	}
	return nil
}

// replyNote tells the user when a queued reply will go out.
func replyNote(d *v1alpha1.Delegation) string {
	n := len(d.Spec.Replies)
	switch d.Status.Phase {
	case v1alpha1.PhaseInputRequired, v1alpha1.PhaseAuthRequired:
		return fmt.Sprintf("delegation %q: reply %d queued; the operator sends it to the waiting task", d.Name, n)
	default:
		return fmt.Sprintf("delegation %q is %s: reply %d is sent when the agent asks for input", d.Name, phaseOf(d), n)
	}
}

func newReplyCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:               "reply NAME TEXT",
		Short:             "Append a reply for a task that asks for input",
		Args:              exactArgs(2),
		ValidArgsFunction: completeDelegations(o),
		RunE:              o.runner(replyCmd),
	}
}

func replyCmd(ctx context.Context, e *env, args []string) error {
	d, err := appendReply(ctx, e.c, e.key(args[0]), args[1])
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, replyNote(d))
	return nil
}
