/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func newApproveCommand(o *options) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve a Delegation waiting for approval (creates a DelegationApproval)",
		Long: `Approve a Delegation that waits Pending, reason AwaitingApproval.

It creates a DelegationApproval naming it: RBAC decides who may (the
delegationapproval-approver role), and the object stays as the record.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "a note kept on the approval")
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		return decideCmd(ctx, e, args[0], v1alpha1.DecisionApproved, reason)
	})
	return cmd
}

func newDenyCommand(o *options) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "deny NAME --reason TEXT",
		Short: "Deny a Delegation waiting for approval: it fails, reason Denied",
		Long: `Deny a Delegation that waits Pending, reason AwaitingApproval.

It creates a DelegationApproval naming it; the Delegation fails with reason
Denied and the message carries --reason. Nothing is sent to its agent.`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown on the Delegation (required)")
	_ = cmd.MarkFlagRequired("reason")
	cmd.RunE = o.runner(func(ctx context.Context, e *env, args []string) error {
		return decideCmd(ctx, e, args[0], v1alpha1.DecisionDenied, reason)
	})
	return cmd
}

func decideCmd(ctx context.Context, e *env, name string, decision v1alpha1.Decision, reason string) error {
	msg, err := decide(ctx, e.c, e.key(name), decision, reason)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

// decide creates a DelegationApproval for the Delegation at key; each
// decision is its own object (a generated name), so none overwrites another.
func decide(ctx context.Context, c client.Client, key client.ObjectKey, decision v1alpha1.Decision, reason string) (string, error) {
	d := &v1alpha1.Delegation{}
	if err := c.Get(ctx, key, d); err != nil {
		return "", err
	}
	if d.Status.Phase.Settled() {
		return fmt.Sprintf("delegation %q is already %s; nothing to decide", d.Name, d.Status.Phase), nil
	}
	a := &v1alpha1.DelegationApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, GenerateName: d.Name + "-"},
		Spec:       v1alpha1.DelegationApprovalSpec{DelegationName: d.Name, Decision: decision, Reason: reason},
	}
	if err := c.Create(ctx, a); err != nil {
		return "", err
	}
	return fmt.Sprintf("delegation %q: %s by DelegationApproval %q", d.Name, decision, a.Name), nil
}
