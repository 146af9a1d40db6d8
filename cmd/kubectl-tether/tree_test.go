/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// research fans out to three workers; one of them delegated again, one was
// created by a tool that only set the ownerReference; batch is a group the
// operator has not seen yet.
func researchTree() []v1alpha1.Delegation {
	return []v1alpha1.Delegation{
		dlg("summarize", "writer", v1alpha1.PhasePending, 3*time.Minute, parent("research"),
			outcome("WaitingForParent", "", "")),
		dlg("research", "planner", v1alpha1.PhaseRunning, 10*time.Minute, task("t-100"),
			outcome("Working", "", ""), budget(v1alpha1.Meters{"tokens": 8000}, v1alpha1.Meters{"tokens": 2000})),
		dlg("search", "searcher", v1alpha1.PhaseSucceeded, 9*time.Minute, parent("research"), task("t-101"),
			outcome("Completed", "", ""), budget(v1alpha1.Meters{"calls": 0, "tokens": 1500}, v1alpha1.Meters{"calls": 3, "tokens": 3500})),
		dlg("fetch", "fetcher", v1alpha1.PhaseFailed, 8*time.Minute, parent("search"),
			outcome("", v1alpha1.FailureUnreachable, "")),
		dlg("ask-user", "clarifier", v1alpha1.PhaseInputRequired, 90*time.Second, func(d *v1alpha1.Delegation) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "delegation.tether.dev/v1alpha1",
				Kind: "Delegation", Name: "research", UID: "u-1", Controller: ptr.To(true)}}
		}),
		dlg("batch", "", "", 5*time.Second),
	}
}

func TestRenderTree(t *testing.T) {
	items := researchTree()
	children := childrenByParent(items)

	tests := []struct {
		name  string
		roots []v1alpha1.Delegation
		want  string
	}{
		{
			name:  "one tree",
			roots: []v1alpha1.Delegation{items[1]},
			want: `NAME            PHASE           REASON             AGENT       TASK    BUDGET LEFT/SPENT            AGE
research        Running         Working            planner     t-100   tokens=8000/2000             10m
├── search      Succeeded       Completed          searcher    t-101   calls=0/3,tokens=1500/3500   9m
│   └── fetch   Failed          Unreachable        fetcher     -       -                            8m
├── summarize   Pending         WaitingForParent   writer      -       -                            3m
└── ask-user    InputRequired   -                  clarifier   -       -                            90s
`,
		},
		{
			name:  "every root in the namespace, oldest first",
			roots: roots(items),
			want: `NAME            PHASE           REASON             AGENT       TASK    BUDGET LEFT/SPENT            AGE
research        Running         Working            planner     t-100   tokens=8000/2000             10m
├── search      Succeeded       Completed          searcher    t-101   calls=0/3,tokens=1500/3500   9m
│   └── fetch   Failed          Unreachable        fetcher     -       -                            8m
├── summarize   Pending         WaitingForParent   writer      -       -                            3m
└── ask-user    InputRequired   -                  clarifier   -       -                            90s
batch           -               -                  (group)     -       -                            5s
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(renderTree(tc.roots, children, now, false)).To(Equal(tc.want))
		})
	}
}

func TestRenderTreeColourDoesNotMoveColumns(t *testing.T) {
	g := NewWithT(t)
	items := researchTree()
	plain := renderTree(roots(items), childrenByParent(items), now, false)
	coloured := renderTree(roots(items), childrenByParent(items), now, true)
	g.Expect(coloured).NotTo(Equal(plain))
	g.Expect(coloured).To(ContainSubstring("\x1b[32mSucceeded\x1b[0m"))
	g.Expect(coloured).To(ContainSubstring("\x1b[31mFailed\x1b[0m"))
	g.Expect(coloured).To(ContainSubstring("\x1b[35mInputRequired\x1b[0m"))
	g.Expect(stripANSI(coloured)).To(Equal(plain))
}

func TestRenderTreeSurvivesACycle(t *testing.T) {
	g := NewWithT(t)
	a := dlg("a", "x", v1alpha1.PhaseRunning, time.Minute, parent("b"))
	b := dlg("b", "x", v1alpha1.PhaseRunning, time.Minute, parent("a"))
	out := renderTree([]v1alpha1.Delegation{a}, childrenByParent([]v1alpha1.Delegation{a, b}), now, false)
	g.Expect(out).To(Equal(`NAME    PHASE     REASON   AGENT   TASK   BUDGET LEFT/SPENT   AGE
a       Running   -        x       -      -                   60s
└── b   Running   -        x       -      -                   60s
    └── a (cycle)
`))
}
