/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestRenderResult(t *testing.T) {
	withResult := func(r *v1alpha1.Result) func(*v1alpha1.Delegation) {
		return func(d *v1alpha1.Delegation) { d.Status.Result = r }
	}
	tests := []struct {
		name    string
		d       v1alpha1.Delegation
		want    string
		wantErr string
	}{
		{
			name: "text only pipes cleanly",
			d:    dlg("a", "x", v1alpha1.PhaseSucceeded, time.Minute, withResult(&v1alpha1.Result{Text: "42"})),
			want: "42\n",
		},
		{
			name: "text and artifacts",
			d: dlg("a", "x", v1alpha1.PhaseSucceeded, time.Minute, withResult(&v1alpha1.Result{
				Text: "Summary follows.\n",
				Artifacts: []v1alpha1.Artifact{
					{Name: "report.md", MediaType: "text/markdown", Text: "# Report\nAll good."},
					{Name: "chart", MediaType: "image/png", URL: "https://example.com/chart.png"},
					{Text: "unnamed"},
				},
			})),
			want: `Summary follows.
--- artifact 1: report.md (text/markdown)
# Report
All good.
--- artifact 2: chart (image/png)
https://example.com/chart.png
--- artifact 3
unnamed
`,
		},
		{
			name:    "nothing yet",
			d:       dlg("a", "x", v1alpha1.PhaseRunning, time.Minute),
			wantErr: `delegation "a" has no result (phase Running)`,
		},
		{
			name:    "an empty result is no result",
			d:       dlg("a", "x", v1alpha1.PhaseFailed, time.Minute, withResult(&v1alpha1.Result{})),
			wantErr: `delegation "a" has no result (phase Failed)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := renderResult(&tc.d, false)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(tc.want))
		})
	}
}

func TestRenderResultEscapesUnlessRaw(t *testing.T) {
	g := NewWithT(t)
	d := dlg("a", "x", v1alpha1.PhaseSucceeded, time.Minute, func(d *v1alpha1.Delegation) {
		d.Status.Result = &v1alpha1.Result{
			Text:      "line one\n\x1b[2J\x1b]52;c;ZXZpbA==\x07done\n",
			Artifacts: []v1alpha1.Artifact{{Name: "evil\x1b[31m", Text: "a\tb\rc"}},
		}
	})
	out, err := renderResult(&d, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("\x1b"))
	g.Expect(out).To(Equal("line one\n^[[2J^[]52;c;ZXZpbA==^Gdone\n--- artifact 1: evil^[[31m\na\tb\\rc\n"))

	raw, err := renderResult(&d, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raw).To(Equal("line one\n\x1b[2J\x1b]52;c;ZXZpbA==\x07done\n--- artifact 1: evil\x1b[31m\na\tb\rc\n"))
}
