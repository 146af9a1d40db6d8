/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/shard"
)

func newShardsCommand(o *options) *cobra.Command {
	var operatorNamespace string
	cmd := &cobra.Command{
		Use:   "shards",
		Short: "Show the operator's shards: their hash ranges, leaders, Lease ages and the namespaces each owns",
		Example: `  kubectl tether shards
  kubectl tether shards --operator-namespace tether-system`,
		Args: exactArgs(0),
		RunE: o.runner(func(ctx context.Context, e *env, _ []string) error {
			return shardsCmd(ctx, e, operatorNamespace)
		}),
	}
	cmd.Flags().StringVar(&operatorNamespace, "operator-namespace", "", "namespace of the operator's Leases (default: every namespace)")
	return cmd
}

const namespaceColumn = "NAMESPACE"

// shardLease is what the Lease of one shard says.
type shardLease struct {
	shard.Shard
	namespace, name, holder string
	renewed                 *metav1.MicroTime
}

// readShardLeases lists the operator's shard Leases (labelled by the
// operator), the shard count from their annotation.
func readShardLeases(ctx context.Context, c client.Client, namespace string) ([]shardLease, error) {
	list := &coordinationv1.LeaseList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.HasLabels{shard.LabelShard}); err != nil {
		return nil, fmt.Errorf("listing the operator's shard Leases: %w", err)
	}
	var out []shardLease
	for _, l := range list.Items {
		i, err1 := strconv.Atoi(l.Labels[shard.LabelShard])
		n, err2 := strconv.Atoi(l.Annotations[shard.AnnotationShards])
		if err1 != nil || err2 != nil || (shard.Shard{Index: i, Count: n}).Validate() != nil {
			continue
		}
		sl := shardLease{Shard: shard.Shard{Index: i, Count: n}, namespace: l.Namespace, name: l.Name, renewed: l.Spec.RenewTime}
		if l.Spec.HolderIdentity != nil {
			sl.holder = *l.Spec.HolderIdentity
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b shardLease) int {
		return strings.Compare(fmt.Sprintf("%s/%06d", a.namespace, a.Index), fmt.Sprintf("%s/%06d", b.namespace, b.Index))
	})
	return out, nil
}

// shardCount is the shard count the Leases agree on; an error names a
// disagreement (a resharding under way, or two installations).
func shardCount(leases []shardLease) (int, error) {
	if len(leases) == 0 {
		return 0, fmt.Errorf("no shard Leases found: is the operator running with leader election?")
	}
	n := leases[0].Count
	for _, l := range leases[1:] {
		if l.Count != n {
			return 0, fmt.Errorf("the shard Leases disagree on the shard count (%s/%s: %d, %s/%s: %d): "+
				"a resharding under way or two installations; pass --operator-namespace",
				leases[0].namespace, leases[0].name, n, l.namespace, l.name, l.Count)
		}
	}
	return n, nil
}

func shardsCmd(ctx context.Context, e *env, operatorNamespace string) error {
	leases, err := readShardLeases(ctx, e.c, operatorNamespace)
	if err != nil {
		return err
	}
	n, err := shardCount(leases)
	if err != nil {
		// After a resharding the old count's Leases stay behind, released.
		held := slices.DeleteFunc(slices.Clone(leases), func(l shardLease) bool { return l.holder == "" })
		if n, err = shardCount(held); err != nil {
			return err
		}
		leases = held
	}
	list := &v1alpha1.DelegationList{}
	if err := e.c.List(ctx, list); err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, renderShards(leases, n, list.Items, e.now))
	return err
}

// renderShards prints one row per shard, then which shard owns each
// namespace that has Delegations.
func renderShards(leases []shardLease, n int, items []v1alpha1.Delegation, now time.Time) string {
	perNamespace := map[string]int{}
	for _, d := range items {
		perNamespace[d.Namespace]++
	}
	namespaces := make([]string, 0, len(perNamespace))
	for ns := range perNamespace {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	owned := make([][]string, n)
	count := make([]int, n)
	for _, ns := range namespaces {
		i := shard.Of(ns, n).Index
		owned[i] = append(owned[i], ns)
		count[i] += perNamespace[ns]
	}
	byIndex := map[int]shardLease{}
	for _, l := range leases {
		byIndex[l.Index] = l
	}
	rows := make([][]string, 0, 1+n)
	rows = append(rows, []string{"SHARD", "RANGE", "LEASE", "LEADER", "RENEWED", "NAMESPACES", "DELEGATIONS"})
	for i := range n {
		s := shard.Shard{Index: i, Count: n}
		start, end := s.Range()
		l, ok := byIndex[i]
		lease, leader, renewed := none, "(no Lease)", none
		if ok {
			lease, leader = l.namespace+"/"+l.name, orNone(escapeLine(l.holder))
			if l.renewed != nil {
				renewed = age(metav1.Time{Time: l.renewed.Time}, now) + " ago"
			}
		}
		rows = append(rows, []string{s.String(), "[" + start + ", " + end + ")", lease, leader, renewed,
			strconv.Itoa(len(owned[i])), strconv.Itoa(count[i])})
	}
	out := renderTable(rows)
	if len(namespaces) > 0 {
		rows = append(rows[:0], []string{namespaceColumn, "HASH", "SHARD", "DELEGATIONS"})
		for _, ns := range namespaces {
			rows = append(rows, []string{ns, shard.Hash(ns), shard.Of(ns, n).String(), strconv.Itoa(perNamespace[ns])})
		}
		out += "\n" + renderTable(rows)
	}
	return out
}

// describeShard is the describe line naming the shard that follows a
// Delegation's namespace and its leader; empty when the operator is not
// sharded (or its Leases cannot be read).
func describeShard(ctx context.Context, e *env, namespace string) string {
	leases, err := readShardLeases(ctx, e.c, "")
	if err != nil {
		return ""
	}
	n, err := shardCount(leases)
	if err != nil || n < 2 {
		return ""
	}
	s := shard.Of(namespace, n)
	value := s.String()
	if i := slices.IndexFunc(leases, func(l shardLease) bool { return l.Index == s.Index && l.holder != "" }); i >= 0 {
		value = fmt.Sprintf("%s (leader %s)", value, leases[i].holder)
	}
	return fieldLine("Shard", escapeLine(value))
}
