/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegationtree"
)

// kindDelegation is the kind of the objects the plugin draws.
const kindDelegation = "Delegation"

// parentName is the one parent rule of the plugin (delegationtree.ParentName).
func parentName(d *v1alpha1.Delegation) string { return delegationtree.ParentName(d) }

// childrenByParent groups Delegations under their parent's namespace/name
// (treeKey), oldest first.
func childrenByParent(items []v1alpha1.Delegation) map[string][]v1alpha1.Delegation {
	children := map[string][]v1alpha1.Delegation{}
	for _, d := range items {
		if p := parentName(&d); p != "" {
			children[treeKey(d.Namespace, p)] = append(children[treeKey(d.Namespace, p)], d)
		}
	}
	for _, list := range children {
		slices.SortFunc(list, olderFirst)
	}
	return children
}

// roots are the Delegations without a parent in items: top-level tasks, and
// children whose parent is gone or not created yet.
func roots(items []v1alpha1.Delegation) []v1alpha1.Delegation {
	names := map[string]bool{}
	for _, d := range items {
		names[treeKey(d.Namespace, d.Name)] = true
	}
	var out []v1alpha1.Delegation
	for _, d := range items {
		if p := parentName(&d); p == "" || !names[treeKey(d.Namespace, p)] {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, olderFirst)
	return out
}

func olderFirst(a, b v1alpha1.Delegation) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// treeView is how the tree is drawn: -o wide adds columns, -A a namespace.
type treeView struct {
	now        time.Time
	color      bool
	wide       bool
	namespaces bool
}

// renderTree draws each root with its descendants, one row per Delegation.
func renderTree(roots []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation, now time.Time, color bool) string {
	return treeView{now: now, color: color}.render(roots, children)
}

func (v treeView) header() []string {
	h := []string{"NAME", "PHASE", colReason, "AGENT", "TASK", "BUDGET LEFT/SPENT", "AGE"}
	if v.wide {
		h = append(h, "REPLIES", "LEASE UNTIL", "DEADLINE", "MESSAGE")
	}
	if v.namespaces {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

// render draws the trees under roots; with -A, roots may come from several
// namespaces, and children is keyed by namespace/name.
func (v treeView) render(roots []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation) string {
	rows := [][]string{v.header()}
	var phases []v1alpha1.Phase
	seen := map[string]bool{}
	var walk func(d *v1alpha1.Delegation, branch, indent string)
	walk = func(d *v1alpha1.Delegation, branch, indent string) {
		if seen[treeKey(d.Namespace, d.Name)] {
			// parentRef chains are checked by the operator; never loop here either.
			rows = append(rows, []string{branch + escapeLine(d.Name) + " (cycle)"})
			phases = append(phases, "")
			return
		}
		seen[treeKey(d.Namespace, d.Name)] = true
		rows = append(rows, v.row(d, branch))
		phases = append(phases, d.Status.Phase)
		kids := children[treeKey(d.Namespace, d.Name)]
		for i := range kids {
			if i == len(kids)-1 {
				walk(&kids[i], indent+"└── ", indent+"    ")
			} else {
				walk(&kids[i], indent+"├── ", indent+"│   ")
			}
		}
	}
	for i := range roots {
		walk(&roots[i], "", "")
	}
	out := renderTable(rows)
	if !v.color {
		return out
	}
	phaseCol := 1
	if v.namespaces {
		phaseCol = 2
	}
	return paintColumn(out, phaseCol, func(row int) string { return phaseColors[phases[row]] })
}

// reasonWithAttempt is the reason, with the attempt under a retry policy:
// "RetryScheduled (attempt 2/3)".
func reasonWithAttempt(d *v1alpha1.Delegation) string {
	if a := delegationtree.Attempt(d); a != "" {
		return reasonOf(d) + " (" + a + ")"
	}
	return reasonOf(d)
}

func (v treeView) row(d *v1alpha1.Delegation, branch string) []string {
	agent := agentOf(d)
	row := []string{
		branch + escapeLine(d.Name),
		phaseOf(d),
		escapeLine(reasonWithAttempt(d)),
		escapeLine(agent),
		escapeLine(orNone(d.Status.TaskID)),
		budgetLeftSpent(d.Status.Budget),
		age(d.CreationTimestamp, v.now),
	}
	if v.wide {
		replies := none
		if n := len(d.Spec.Replies); n > 0 {
			replies = fmt.Sprintf("%d/%d", d.Status.RepliesSent, n)
		}
		lease := none
		if l := d.Status.Lease; l != nil && l.GrantedUntil != nil {
			lease = l.GrantedUntil.UTC().Format(time.RFC3339)
		}
		deadline := none
		if d.Status.Deadline != nil {
			deadline = d.Status.Deadline.UTC().Format(time.RFC3339)
		}
		message := none
		if o := d.Status.Outcome; o != nil && o.Message != "" {
			message = escapeLine(truncate(o.Message, 80))
		}
		row = append(row, replies, lease, deadline, message)
	}
	if v.namespaces {
		row = append([]string{d.Namespace}, row...)
	}
	return row
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func treeKey(namespace, name string) string { return delegationtree.Key(namespace, name) }

// budgetLeftSpent prints each meter as name=left/spent.
func budgetLeftSpent(b *v1alpha1.BudgetStatus) string {
	if b == nil {
		return none
	}
	names := sortedKeys(b.Left, b.Spent)
	if len(names) == 0 {
		return none
	}
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, escapeLine(name)+"="+itoa(b.Left[name])+"/"+itoa(b.Spent[name]))
	}
	return strings.Join(parts, ",")
}
