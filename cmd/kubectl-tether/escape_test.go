/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestEscapeControls(t *testing.T) {
	tests := []struct {
		name, in, line, block string
	}{
		{name: "plain text and unicode pass", in: "tidal power — ok ✓", line: "tidal power — ok ✓", block: "tidal power — ok ✓"},
		{name: "screen clear", in: "a\x1b[2Jb", line: "a^[[2Jb", block: "a^[[2Jb"},
		{name: "OSC 52 clipboard write", in: "\x1b]52;c;ZXZpbA==\x07", line: "^[]52;c;ZXZpbA==^G", block: "^[]52;c;ZXZpbA==^G"},
		{name: "newline and tab", in: "a\n\tb", line: `a\n\tb`, block: "a\n\tb"},
		{name: "carriage return rewrites the line", in: "ok\rFAIL", line: `ok\rFAIL`, block: `ok\rFAIL`},
		{name: "backspace and DEL", in: "x\by\x7f", line: "x^Hy^?", block: "x^Hy^?"},
		{name: "one-byte CSI (C1)", in: "a\u009b2Jb", line: `a\u009b2Jb`, block: `a\u009b2Jb`},
		{name: "bidi override", in: "abc\u202edef", line: `abc\u202edef`, block: `abc\u202edef`},
		{name: "invalid UTF-8", in: "a\xffb", line: `a\xffb`, block: `a\xffb`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(escapeLine(tc.in)).To(Equal(tc.line))
			g.Expect(escapeBlock(tc.in)).To(Equal(tc.block))
		})
	}
}
