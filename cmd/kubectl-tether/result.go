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

// renderResult prints the result text, then each artifact under a header line,
// so the output pipes cleanly when there is only text. Unless raw, control
// characters from the agent are shown as visible escapes.
func renderResult(d *v1alpha1.Delegation, raw bool) (string, error) {
	block, line := escapeBlock, escapeLine
	if raw {
		block = func(s string) string { return s }
		line = block
	}
	r := d.Status.Result
	if r == nil || (r.Text == "" && len(r.Artifacts) == 0) {
		return "", fmt.Errorf("delegation %q has no result (phase %s)", d.Name, phaseOf(d))
	}
	var b strings.Builder
	writeBlock(&b, block(r.Text))
	for i, a := range r.Artifacts {
		header := fmt.Sprintf("--- artifact %d", i+1)
		if a.Name != "" {
			header += ": " + line(a.Name)
		}
		if a.MediaType != "" {
			header += " (" + line(a.MediaType) + ")"
		}
		b.WriteString(header + "\n")
		if a.URL != "" {
			b.WriteString(line(a.URL) + "\n")
		}
		writeBlock(&b, block(a.Text))
	}
	return b.String(), nil
}

func writeBlock(b *strings.Builder, text string) {
	if text == "" {
		return
	}
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
}
