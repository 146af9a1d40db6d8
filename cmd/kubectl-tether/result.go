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
// so the output pipes cleanly when there is only text.
func renderResult(d *v1alpha1.Delegation) (string, error) {
	r := d.Status.Result
	if r == nil || (r.Text == "" && len(r.Artifacts) == 0) {
		return "", fmt.Errorf("delegation %q has no result (phase %s)", d.Name, phaseOf(d))
	}
	var b strings.Builder
	writeBlock(&b, r.Text)
	for i, a := range r.Artifacts {
		header := fmt.Sprintf("--- artifact %d", i+1)
		if a.Name != "" {
			header += ": " + a.Name
		}
		if a.MediaType != "" {
			header += " (" + a.MediaType + ")"
		}
		b.WriteString(header + "\n")
		if a.URL != "" {
			b.WriteString(a.URL + "\n")
		}
		writeBlock(&b, a.Text)
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
