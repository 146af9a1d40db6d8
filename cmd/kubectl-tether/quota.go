/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func newQuotaCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "quota",
		Short: "Show the namespace's DelegationQuotas: what its Delegations hold (used) against each limit (hard)",
		Example: `  kubectl tether quota -n team-a
  kubectl tether quota -A`,
		Args: exactArgs(0),
		RunE: o.runner(func(ctx context.Context, e *env, _ []string) error {
			list := &v1alpha1.DelegationQuotaList{}
			if err := e.c.List(ctx, list, client.InNamespace(e.listNamespace())); err != nil {
				return fmt.Errorf("listing DelegationQuotas: %w", err)
			}
			if len(list.Items) == 0 {
				_, err := fmt.Fprintln(e.stderr, "No DelegationQuotas found.")
				return err
			}
			_, err := io.WriteString(e.stdout, renderQuotas(list.Items, e.allNamespaces))
			return err
		}),
	}
}

// renderQuotas prints one row per quota and limit, ResourceQuota's
// `kubectl describe` way: the resource, what is used, the hard limit. The
// depth, children and per-Delegation limits (maxBudget, maxAttempts) are
// checked per Delegation (nothing is summed), so their used column is "-"; a
// meter's row is named with its window (tokens/24h) and shows what the window
// holds; waiting shows how many wait for any quota.
func renderQuotas(items []v1alpha1.DelegationQuota, withNamespace bool) string {
	slices.SortFunc(items, func(a, b v1alpha1.DelegationQuota) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	header := []string{"QUOTA", "RESOURCE", "USED", "HARD"}
	if withNamespace {
		header = append([]string{namespaceColumn}, header...)
	}
	rows := [][]string{header}
	addRow := func(q v1alpha1.DelegationQuota, resource, used, hard string) {
		row := []string{q.Name, resource, used, hard}
		if withNamespace {
			row = append([]string{q.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	for _, q := range items {
		add := func(resource, used string, hard *int32) {
			h := none
			if hard != nil {
				h = strconv.Itoa(int(*hard))
			} else if resource != "waiting" {
				return
			}
			addRow(q, resource, used, h)
		}
		h := q.Spec.Hard
		add("inFlight", strconv.Itoa(int(q.Status.Used.InFlight)), h.InFlight)
		add("depth", none, h.Depth)
		add("childrenPerParent", none, h.ChildrenPerParent)
		for _, m := range slices.Sorted(maps.Keys(h.MaxBudget)) {
			addRow(q, "maxBudget."+m, none, strconv.FormatInt(h.MaxBudget[m], 10))
		}
		add("maxAttempts", none, h.MaxAttempts)
		for _, l := range h.Meters {
			used := int64(0)
			if i := slices.IndexFunc(q.Status.Used.Meters, func(m v1alpha1.MeterUse) bool { return m.Name == l.Name }); i >= 0 {
				used = q.Status.Used.Meters[i].Used
			}
			addRow(q, l.Name+"/"+delegation.WindowString(l.Window.Duration), strconv.FormatInt(used, 10), strconv.FormatInt(l.Limit, 10))
		}
		add("waiting", strconv.Itoa(int(q.Status.Used.Waiting)), nil)
	}
	return renderTable(rows)
}
