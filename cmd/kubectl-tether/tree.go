/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// parentName is the name of d's parent: spec.parentRef, or failing that a
// Delegation ownerReference (objects created by tools that set the owner
// directly), preferring the controller reference.
func parentName(d *v1alpha1.Delegation) string {
	if d.Spec.ParentRef != nil {
		return d.Spec.ParentRef.Name
	}
	name := ""
	for _, ref := range d.OwnerReferences {
		if ref.Kind != "Delegation" || !strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			continue
		}
		if ref.Controller != nil && *ref.Controller {
			return ref.Name
		}
		if name == "" {
			name = ref.Name
		}
	}
	return name
}

// childrenByParent groups Delegations under their parent's name, oldest first.
func childrenByParent(items []v1alpha1.Delegation) map[string][]v1alpha1.Delegation {
	children := map[string][]v1alpha1.Delegation{}
	for _, d := range items {
		if p := parentName(&d); p != "" {
			children[p] = append(children[p], d)
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
		names[d.Name] = true
	}
	var out []v1alpha1.Delegation
	for _, d := range items {
		if p := parentName(&d); p == "" || !names[p] {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, olderFirst)
	return out
}

func olderFirst(a, b v1alpha1.Delegation) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// renderTree draws each root with its descendants, one row per Delegation.
func renderTree(roots []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation, now time.Time, color bool) string {
	rows := [][]cell{{{text: "NAME"}, {text: "PHASE"}, {text: "REASON"}, {text: "AGENT"},
		{text: "TASK"}, {text: "BUDGET LEFT/SPENT"}, {text: "AGE"}}}
	seen := map[string]bool{}
	var walk func(d *v1alpha1.Delegation, branch, indent string)
	walk = func(d *v1alpha1.Delegation, branch, indent string) {
		if seen[d.Name] {
			// parentRef chains are checked by the operator; never loop here either.
			rows = append(rows, []cell{{text: branch + d.Name + " (cycle)"}})
			return
		}
		seen[d.Name] = true
		rows = append(rows, treeRow(d, branch, now))
		kids := children[d.Name]
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
	return renderTable(rows, color)
}

func treeRow(d *v1alpha1.Delegation, branch string, now time.Time) []cell {
	agent := "(group)"
	if d.Spec.AgentRef != nil {
		agent = d.Spec.AgentRef.Name
	}
	return []cell{
		{text: branch + d.Name},
		{text: phaseOf(d), sgr: phaseColors[d.Status.Phase]},
		{text: reasonOf(d)},
		{text: agent},
		{text: orNone(d.Status.TaskID)},
		{text: budgetLeftSpent(d.Status.Budget)},
		{text: age(d.CreationTimestamp, now)},
	}
}

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
		parts = append(parts, name+"="+itoa(b.Left[name])+"/"+itoa(b.Spent[name]))
	}
	return strings.Join(parts, ",")
}
