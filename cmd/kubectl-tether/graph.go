/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"fmt"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The graph outputs of tree.
const (
	graphDot     = "dot"
	graphMermaid = "mermaid"
)

// phaseFills are the graph colours of each phase (fill, stroke), the same
// families as the terminal's phaseColors and the web view's.
var phaseFills = map[v1alpha1.Phase][2]string{
	"":                          {"#f3f4f6", "#9ca3af"},
	v1alpha1.PhasePending:       {"#f3f4f6", "#9ca3af"},
	v1alpha1.PhaseRunning:       {"#dbeafe", "#2563eb"},
	v1alpha1.PhaseInputRequired: {"#f3e8ff", "#9333ea"},
	v1alpha1.PhaseAuthRequired:  {"#f3e8ff", "#9333ea"},
	v1alpha1.PhaseSucceeded:     {"#dcfce7", "#16a34a"},
	v1alpha1.PhaseFailed:        {"#fee2e2", "#dc2626"},
	v1alpha1.PhaseCanceled:      {"#fef3c7", "#d97706"},
	v1alpha1.PhaseDetached:      {"#e5e7eb", "#4b5563"},
}

// graphNode is one Delegation as a graph draws it: an id unique in the graph,
// its label lines and its parent's id ("" for a root).
type graphNode struct {
	id, parent string
	namespace  string
	lines      []string
	phase      v1alpha1.Phase
}

// graphNodes walks the trees as tree draws them and labels each Delegation:
// name, agent, phase (with reason) and the budget left/spent.
func graphNodes(roots []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation) []graphNode {
	ids := map[string]string{}
	order := treeOrder(roots, children)
	out := make([]graphNode, 0, len(order))
	for _, d := range order {
		k := treeKey(d.Namespace, d.Name)
		ids[k] = fmt.Sprintf("n%d", len(ids))
		agent := agentOf(&d)
		phase := phaseOf(&d)
		if r := reasonOf(&d); r != none {
			phase += " (" + r + ")"
		}
		n := graphNode{id: ids[k], namespace: d.Namespace, phase: d.Status.Phase,
			lines: []string{d.Name, agent, phase}}
		if b := budgetLeftSpent(d.Status.Budget); b != none {
			n.lines = append(n.lines, "left/spent "+b)
		}
		if p := parentName(&d); p != "" {
			n.parent = ids[treeKey(d.Namespace, p)] // "" when the parent is not drawn
		}
		out = append(out, n)
	}
	return out
}

func renderGraph(format string, roots []v1alpha1.Delegation, children map[string][]v1alpha1.Delegation, namespaces bool) string {
	nodes := graphNodes(roots, children)
	if format == graphMermaid {
		return renderMermaid(nodes, namespaces)
	}
	return renderDot(nodes, namespaces)
}

// renderDot prints a Graphviz digraph; with -A each namespace is a cluster.
func renderDot(nodes []graphNode, namespaces bool) string {
	var b strings.Builder
	b.WriteString("digraph tether {\n  rankdir=TB;\n")
	b.WriteString(`  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];` + "\n")
	b.WriteString(`  edge [color="#6b7280"];` + "\n")
	writeGraph(&b, nodes, namespaces, graphSyntax{
		openGroup: func(b *strings.Builder, i int, ns string) {
			fmt.Fprintf(b, "  subgraph cluster_%d {\n    label=%s;\n", i, dotString(ns))
		},
		closeGroup: "  }\n",
		node: func(b *strings.Builder, indent string, n graphNode) {
			fill := phaseFills[n.phase]
			fmt.Fprintf(b, "%s%s [label=%s, fillcolor=%s, color=%s];\n", indent, n.id,
				dotString(strings.Join(n.lines, "\n")), dotString(fill[0]), dotString(fill[1]))
		},
		edge: "  %s -> %s;\n",
	})
	b.WriteString("}\n")
	return b.String()
}

// graphSyntax is how one output format writes the parts of a graph.
type graphSyntax struct {
	openGroup  func(b *strings.Builder, i int, namespace string)
	closeGroup string
	node       func(b *strings.Builder, indent string, n graphNode)
	edge       string // a format of the parent's and the child's ids
}

// writeGraph walks the nodes once for every format: with namespaces each
// namespace is a group, then an edge from each parent to its child.
func writeGraph(b *strings.Builder, nodes []graphNode, namespaces bool, g graphSyntax) {
	ns, indent := "", "  "
	if namespaces {
		indent = "    "
	}
	for i, n := range nodes {
		if namespaces && n.namespace != ns {
			if ns != "" {
				b.WriteString(g.closeGroup)
			}
			ns = n.namespace
			g.openGroup(b, i, ns)
		}
		g.node(b, indent, n)
	}
	if namespaces && ns != "" {
		b.WriteString(g.closeGroup)
	}
	for _, n := range nodes {
		if n.parent != "" {
			fmt.Fprintf(b, g.edge, n.parent, n.id)
		}
	}
}

// dotString quotes s as a DOT string: quotes and backslashes escaped, a
// newline as DOT's \n, other control characters made visible.
func dotString(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = escapeLine(l)
		l = strings.ReplaceAll(l, `\`, `\\`)
		lines[i] = strings.ReplaceAll(l, `"`, `\"`)
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}

// renderMermaid prints a Mermaid flowchart; with -A each namespace is a subgraph.
func renderMermaid(nodes []graphNode, namespaces bool) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	used := map[v1alpha1.Phase]bool{}
	writeGraph(&b, nodes, namespaces, graphSyntax{
		openGroup: func(b *strings.Builder, i int, ns string) {
			fmt.Fprintf(b, "  subgraph ns%d[\"%s\"]\n", i, mermaidText(ns))
		},
		closeGroup: "  end\n",
		node: func(b *strings.Builder, indent string, n graphNode) {
			texts := make([]string, len(n.lines))
			for j, l := range n.lines {
				texts[j] = mermaidText(l)
			}
			fmt.Fprintf(b, "%s%s[\"%s\"]:::%s\n", indent, n.id, strings.Join(texts, "<br/>"), mermaidClass(n.phase))
			used[n.phase] = true
		},
		edge: "  %s --> %s\n",
	})
	classes := map[string]bool{}
	for _, p := range []v1alpha1.Phase{"", v1alpha1.PhasePending, v1alpha1.PhaseRunning, v1alpha1.PhaseInputRequired,
		v1alpha1.PhaseAuthRequired, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseCanceled, v1alpha1.PhaseDetached} {
		class := mermaidClass(p)
		if !used[p] || classes[class] {
			continue
		}
		classes[class] = true
		fill := phaseFills[p]
		fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:%s,color:#111827\n", class, fill[0], fill[1])
	}
	return b.String()
}

// mermaidClass names a phase's class: the phase in lower case, "unknown"
// before the operator wrote one.
func mermaidClass(p v1alpha1.Phase) string {
	if p == "" {
		return "unknown"
	}
	return strings.ToLower(string(p))
}

// mermaidText makes s safe inside a quoted Mermaid label: Mermaid reads
// entity codes there (#quot;), and renders labels as HTML.
func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;", "#", "#35;")
	return r.Replace(escapeLine(s))
}
