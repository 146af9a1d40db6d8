/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestRenderGraphs(t *testing.T) {
	items := researchTree()
	tops := named(items, "research")
	children := childrenByParent(items)

	t.Run("dot", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(renderGraph(graphDot, tops, children, false)).To(Equal(`digraph tether {
  rankdir=TB;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];
  edge [color="#6b7280"];
  n0 [label="research\nplanner\nRunning (Working)\nleft/spent tokens=8000/2000", fillcolor="#dbeafe", color="#2563eb"];
  n1 [label="search\nsearcher\nSucceeded (Completed)\nleft/spent calls=0/3,tokens=1500/3500", fillcolor="#dcfce7", color="#16a34a"];
  n2 [label="fetch\nfetcher\nFailed (Unreachable)", fillcolor="#fee2e2", color="#dc2626"];
  n3 [label="summarize\nwriter\nPending (WaitingForParent)", fillcolor="#f3f4f6", color="#9ca3af"];
  n4 [label="ask-user\nclarifier\nInputRequired", fillcolor="#f3e8ff", color="#9333ea"];
  n0 -> n1;
  n1 -> n2;
  n0 -> n3;
  n0 -> n4;
}
`))
	})
	t.Run("mermaid", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(renderGraph(graphMermaid, tops, children, false)).To(Equal(`flowchart TD
  n0["research<br/>planner<br/>Running (Working)<br/>left/spent tokens=8000/2000"]:::running
  n1["search<br/>searcher<br/>Succeeded (Completed)<br/>left/spent calls=0/3,tokens=1500/3500"]:::succeeded
  n2["fetch<br/>fetcher<br/>Failed (Unreachable)"]:::failed
  n3["summarize<br/>writer<br/>Pending (WaitingForParent)"]:::pending
  n4["ask-user<br/>clarifier<br/>InputRequired"]:::inputrequired
  n0 --> n1
  n1 --> n2
  n0 --> n3
  n0 --> n4
  classDef pending fill:#f3f4f6,stroke:#9ca3af,color:#111827
  classDef running fill:#dbeafe,stroke:#2563eb,color:#111827
  classDef inputrequired fill:#f3e8ff,stroke:#9333ea,color:#111827
  classDef succeeded fill:#dcfce7,stroke:#16a34a,color:#111827
  classDef failed fill:#fee2e2,stroke:#dc2626,color:#111827
`))
	})
}

func TestGraphLabelsCannotBreakOut(t *testing.T) {
	g := NewWithT(t)
	d := dlg("x", "a", v1alpha1.PhaseFailed, 0, outcome("Quote\"<b>#1\\", "", ""))
	d.Namespace = "team-a"
	tops := []v1alpha1.Delegation{d}
	dot := renderGraph(graphDot, tops, nil, true)
	g.Expect(dot).To(ContainSubstring(`label="x\na\nFailed (Quote\"<b>#1\\)"`))
	g.Expect(dot).To(ContainSubstring("subgraph cluster_0 {\n    label=\"team-a\";\n"))
	mermaid := renderGraph(graphMermaid, tops, nil, true)
	g.Expect(mermaid).To(ContainSubstring(`n0["x<br/>a<br/>Failed (Quote#quot;#lt;b#gt;#35;1\)"]:::failed`))
	g.Expect(mermaid).To(ContainSubstring("  subgraph ns0[\"team-a\"]\n"))
	g.Expect(mermaid).To(ContainSubstring("  end\n"))
}
