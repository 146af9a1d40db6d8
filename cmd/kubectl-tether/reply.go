/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// appendReply appends text to spec.replies. The merge patch carries the
// resourceVersion it was computed from, so the API server refuses it with a
// Conflict when someone else appended in between; we then read again and
// append to the fresh list, and no reply is ever lost or reordered.
func appendReply(ctx context.Context, c client.Client, key client.ObjectKey, reply v1alpha1.Reply) (*v1alpha1.Delegation, error) {
	d := &v1alpha1.Delegation{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, d); err != nil {
			return err
		}
		if err := replyAllowed(d); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
		d.Spec.Replies = append(d.Spec.Replies, reply)
		return c.Patch(ctx, d, patch)
	})
	return d, err
}

// replyAllowed refuses replies that could never be sent.
func replyAllowed(d *v1alpha1.Delegation) error {
	if d.Spec.AgentRef == nil {
		return fmt.Errorf("delegation %q is a group: replies go to one of its tasks", d.Name)
	}
	if d.Status.Phase.Settled() {
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
	var f replyFlags
	cmd := &cobra.Command{
		Use:   "reply NAME [TEXT]",
		Short: "Append a reply for a task that asks for input",
		Long: `Append a reply for a task that asks for input.

A reply carries text and/or data parts (--data, JSON inline or @file, repeatable),
message metadata (--metadata key=value, or key=@file.json for a JSON value), and
the A2A extensions to activate for the call that sends it (--extension URI): an
agent that asks for approval through an extension reads the answer's data under
the extension's URI.`,
		Example: `  kubectl tether reply research "Only EU companies, please."
  kubectl tether reply deploy --extension https://example.com/ext/approval/v1 \
      --metadata https://example.com/ext/approval/v1=@decision.json
  kubectl tether reply deploy --data '{"approved": true}' --data @context.json`,
		Args:              rangeArgs(1, 2),
		ValidArgsFunction: completeDelegations(o),
	}
	cmd.Flags().StringArrayVar(&f.data, "data", nil, "a data part: JSON, or @FILE holding JSON (repeatable)")
	cmd.Flags().StringArrayVar(&f.metadata, "metadata", nil, "message metadata KEY=VALUE (a string), or KEY=@FILE holding JSON (repeatable)")
	cmd.Flags().StringArrayVar(&f.extensions, "extension", nil, "URI of an A2A extension to activate for this reply (repeatable)")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		reply, err := f.build(args[1:])
		if err != nil {
			return usageError{err}
		}
		return o.runner(func(ctx context.Context, e *env, args []string) error {
			return sendReply(ctx, e, args[0], reply)
		})(c, args)
	}
	return cmd
}

// replyFlags are what `reply` takes besides the text.
type replyFlags struct {
	data, metadata, extensions []string
}

// build checks and assembles the reply before anything talks to the cluster.
func (f replyFlags) build(text []string) (v1alpha1.Reply, error) {
	var r v1alpha1.Reply
	if len(text) == 1 {
		r.Text = text[0]
	}
	for _, d := range f.data {
		raw, err := readJSON(d)
		if err != nil {
			return r, fmt.Errorf("--data: %w", err)
		}
		r.Parts = append(r.Parts, v1alpha1.Part{Data: &runtime.RawExtension{Raw: raw}})
	}
	for _, kv := range f.metadata {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return r, fmt.Errorf("--metadata %q: want KEY=VALUE or KEY=@FILE", kv)
		}
		if strings.HasPrefix(key, "https://tether.dev/") {
			return r, fmt.Errorf("--metadata %s: keys under https://tether.dev/ are reserved for the operator", key)
		}
		raw, err := json.Marshal(value)
		if strings.HasPrefix(value, "@") {
			raw, err = readJSON(value)
		}
		if err != nil {
			return r, fmt.Errorf("--metadata %s: %w", key, err)
		}
		if r.Metadata == nil {
			r.Metadata = map[string]apiextensionsv1.JSON{}
		}
		r.Metadata[key] = apiextensionsv1.JSON{Raw: raw}
	}
	for _, uri := range f.extensions {
		u, err := url.Parse(uri)
		if err != nil || u.Scheme == "" || strings.ContainsAny(uri, ", ") {
			return r, fmt.Errorf("--extension %q is not a URI", uri)
		}
		r.Extensions = append(r.Extensions, uri)
	}
	if r.Text == "" && len(r.Parts) == 0 {
		return r, errors.New("a reply needs TEXT or --data")
	}
	return r, nil
}

// readJSON reads a JSON value given inline or as @FILE, compacted.
func readJSON(arg string) ([]byte, error) {
	raw := []byte(arg)
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if raw, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return buf.Bytes(), nil
}

func replyCmd(ctx context.Context, e *env, args []string) error {
	return sendReply(ctx, e, args[0], v1alpha1.Reply{Text: args[1]})
}

func sendReply(ctx context.Context, e *env, name string, reply v1alpha1.Reply) error {
	d, err := appendReply(ctx, e.c, e.key(name), reply)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, replyNote(d))
	return nil
}
