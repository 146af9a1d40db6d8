/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/internal/a2a"
)

// Whatever an agent returns, the result fits the CRD's bounds.
func TestBoundedResultFitsStatus(t *testing.T) {
	g := NewWithT(t)
	big := strings.Repeat("é", 10000)
	task := &a2a.Task{ResultText: big}
	for range 40 {
		task.Artifacts = append(task.Artifacts, a2a.Artifact{Name: big, MediaType: big, Text: big, URL: "https://x/" + big})
	}
	res := boundedResult(task, 16<<10)
	g.Expect(res.Truncated).To(BeTrue())
	g.Expect(len(res.Text)).To(BeNumerically("<=", 16<<10))
	g.Expect(utf8.ValidString(res.Text)).To(BeTrue())
	g.Expect(res.Artifacts).To(HaveLen(32))
	for _, a := range res.Artifacts {
		g.Expect(len(a.Name)).To(BeNumerically("<=", 256))
		g.Expect(len(a.MediaType)).To(BeNumerically("<=", 256))
		g.Expect(len(a.Text)).To(BeNumerically("<=", 4096))
		g.Expect(a.URL).To(BeEmpty(), "a URL too long to keep is dropped, not cut")
		g.Expect(utf8.ValidString(a.Name + a.MediaType + a.Text)).To(BeTrue())
	}

	small := boundedResult(&a2a.Task{ResultText: "ok", Artifacts: []a2a.Artifact{{Name: "a", URL: "https://x/a"}}}, 16<<10)
	g.Expect(small.Truncated).To(BeFalse())
	g.Expect(small.Artifacts[0].URL).To(Equal("https://x/a"))
}
