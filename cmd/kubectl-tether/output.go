/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// outputFlags is -o for a listing command: the human table (optionally
// -o wide), or any of kubectl's printers (json, yaml, name, jsonpath, ...).
type outputFlags struct {
	print *genericclioptions.PrintFlags
	// graphs allows -o dot and -o mermaid (tree only).
	graphs bool
}

func addOutputFlags(cmd *cobra.Command) *outputFlags {
	f := &outputFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(printScheme())}
	f.print.AddFlags(cmd)
	cmd.Flag("output").Usage = "Output format: one of (json, yaml, name, wide, jsonpath=..., go-template=...). Default: the table."
	return f
}

func (f *outputFlags) format() string {
	if f == nil {
		return ""
	}
	return strings.ToLower(*f.print.OutputFormat)
}

// human says whether to print the table (the default and -o wide).
func (f *outputFlags) human() bool { return f.format() == "" || f.format() == "wide" }

func (f *outputFlags) wide() bool { return f.format() == "wide" }

// graph is "dot" or "mermaid" when the command draws graphs and one was asked for.
func (f *outputFlags) graph() string {
	if f == nil || !f.graphs {
		return ""
	}
	switch format := f.format(); format {
	case graphDot, graphMermaid:
		return format
	}
	return ""
}

// printObject prints obj with the chosen machine-readable printer.
func (f *outputFlags) printObject(obj runtime.Object, w io.Writer) error {
	p, err := f.print.ToPrinter()
	if err != nil {
		return usageError{err}
	}
	if f.format() == "name" && meta.IsListType(obj) {
		// The name printer takes one object at a time.
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := p.PrintObj(item, w); err != nil {
				return err
			}
		}
		return nil
	}
	return p.PrintObj(obj, w)
}

// validate refuses an unknown -o before anything is sent.
func (f *outputFlags) validate() error {
	if f.human() || f.graph() != "" {
		return nil
	}
	if _, err := f.print.ToPrinter(); err != nil {
		return usageError{err}
	}
	return nil
}

func printScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := addEventsToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}

// renderTable aligns rows in columns with kubectl's own tab writer (the one
// `kubectl get` uses). Cells must already be escaped; colour is added after
// alignment (see paintColumn), so escape codes never skew the columns.
func renderTable(rows [][]string) string {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	for _, row := range rows {
		_, _ = io.WriteString(w, strings.Join(row, "\t")+"\n")
	}
	_ = w.Flush()
	return buf.String()
}

// paintColumn colours, in an aligned table, the cell of column col in each
// row (after the header) with the SGR code sgrOf returns for the row's index.
func paintColumn(table string, col int, sgrOf func(row int) string) string {
	lines := strings.SplitAfter(table, "\n")
	if len(lines) == 0 {
		return table
	}
	start := columnStart(lines[0], col)
	if start < 0 {
		return table
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] == "" {
			continue
		}
		sgr := sgrOf(i - 1)
		runes := []rune(lines[i])
		if sgr == "" || len(runes) <= start || runes[start] == ' ' {
			continue
		}
		end := start
		for end < len(runes) && runes[end] != ' ' && runes[end] != '\n' {
			end++
		}
		lines[i] = string(runes[:start]) + paint(string(runes[start:end]), sgr, true) + string(runes[end:])
	}
	return strings.Join(lines, "")
}

// columnStart is the rune offset of column col in the header line. Columns
// are at least three spaces apart; a single space belongs to a column's name.
func columnStart(header string, col int) int {
	runes := []rune(header)
	n, spaces := 0, 0
	for i, r := range runes {
		if r == ' ' {
			spaces++
			continue
		}
		if spaces >= 2 {
			n++
			if n == col {
				return i
			}
		}
		spaces = 0
	}
	if col == 0 {
		return 0
	}
	return -1
}
