/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// applySamples creates the namespace, the sample Agents (pointed at the
// agents this demo started) and the tree from config/samples.
func (d *demo) applySamples(ctx context.Context) error {
	say("applying config/samples (agents.yaml, tree.yaml) in namespace %q", namespace)
	if err := d.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	for _, file := range []string{"agents.yaml", "tree.yaml"} {
		data, err := os.ReadFile(filepath.Join(d.root, "config", "samples", file))
		if err != nil {
			return err
		}
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			obj, err := decodeSample(doc)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if obj == nil {
				continue // an empty document
			}
			obj.SetNamespace(namespace)
			if err := d.c.Create(ctx, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeSample reads an Agent (pointed at the agent this demo started) or a
// Delegation.
func decodeSample(doc []byte) (client.Object, error) {
	var kind metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &kind); err != nil {
		return nil, err
	}
	switch kind.Kind {
	case "":
		return nil, nil
	case "Agent":
		a := &v1alpha1.Agent{}
		if err := yaml.Unmarshal(doc, a); err != nil {
			return nil, err
		}
		if u, ok := agentURL[a.Name]; ok {
			a.Spec.URL = u
		}
		return a, nil
	case "Delegation":
		dl := &v1alpha1.Delegation{}
		return dl, yaml.Unmarshal(doc, dl)
	}
	return nil, fmt.Errorf("unexpected kind %q", kind.Kind)
}

func (d *demo) list(ctx context.Context) ([]v1alpha1.Delegation, error) {
	var l v1alpha1.DelegationList
	err := d.c.List(ctx, &l, client.InNamespace(namespace))
	return l.Items, err
}

// watchTree prints the tree each time it changes until done says so.
func (d *demo) watchTree(ctx context.Context, limit time.Duration, done func([]v1alpha1.Delegation) bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last := ""
	for {
		if t := d.tree(ctx); t != last {
			fmt.Printf("\n%s", t)
			last = t
		}
		items, err := d.list(ctx)
		if err == nil && done(items) {
			fmt.Println()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the tree did not get there within %s", limit)
		case <-time.After(time.Second):
		}
	}
}

// treeIsBusy: summarize finished, and the survey's three workers and the
// draft are running.
func (d *demo) treeIsBusy(items []v1alpha1.Delegation) bool {
	running, workers, summarized := 0, 0, false
	for _, it := range items {
		if it.Name == "summarize" && it.Status.Phase == v1alpha1.PhaseSucceeded {
			summarized = true
		}
		if it.Status.Phase == v1alpha1.PhaseRunning {
			running++
			if it.Spec.ParentRef != nil && it.Spec.ParentRef.Name == "survey" {
				workers++
			}
		}
	}
	return summarized && workers == 3 && running >= 6
}

func (d *demo) treeIsSettled(items []v1alpha1.Delegation) bool {
	for _, it := range items {
		if !delegation.Settled(it.Status.Phase) {
			return false
		}
	}
	return len(items) > 0
}

func (d *demo) cancelRoot(ctx context.Context) error {
	root := &v1alpha1.Delegation{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "research"}, root); err != nil {
		return err
	}
	patch := client.MergeFrom(root.DeepCopy())
	root.Spec.Cancel = true
	return d.c.Patch(ctx, root, patch)
}

// summary says what happened to each node and what the agents saw.
func (d *demo) summary() {
	items, _ := d.list(context.Background())
	say("summary")
	for _, it := range items {
		reason := ""
		if it.Status.Outcome != nil {
			reason = it.Status.Outcome.Reason
		}
		fmt.Printf("    %-28s %-10s %s\n", it.Name, it.Status.Phase, reason)
	}
	for _, p := range d.procs[1:] {
		fmt.Printf("    %s: %d tasks received, %d cancelled\n", p.Name(),
			strings.Count(p.Log(), "task received"), strings.Count(p.Log(), "task cancelled"))
	}
	for _, it := range items {
		if it.Name == "research" && it.Status.Budget != nil {
			b := it.Status.Budget
			fmt.Printf("    research ledger: granted %v, spent %v, reserved %v, left %v\n", b.Granted, b.Spent, b.Reserved, b.Left)
		}
	}
}
