/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package textsafe

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		in, line, block string
	}{
		{in: "plain text, ünïcödé", line: "plain text, ünïcödé", block: "plain text, ünïcödé"},
		{in: "two\nlines\tand a tab", line: `two\nlines\tand a tab`, block: "two\nlines\tand a tab"},
		{in: "\x1b[2Jcleared", line: "^[[2Jcleared", block: "^[[2Jcleared"},
		{in: "\x1b]52;c;aGVsbG8=\x07", line: "^[]52;c;aGVsbG8=^G", block: "^[]52;c;aGVsbG8=^G"},
		{in: "done\rFAILED", line: `done\rFAILED`, block: `done\rFAILED`},
		{in: "\u009b31m", line: `\u009b31m`, block: `\u009b31m`},
		{in: "a\u202eevil\u2066x\u2069\u200f\u061c", line: `a\u202eevil\u2066x\u2069\u200f\u061c`, block: `a\u202eevil\u2066x\u2069\u200f\u061c`},
		{in: "del\x7f", line: "del^?", block: "del^?"},
		{in: "bad\xffbyte", line: `bad\xffbyte`, block: `bad\xffbyte`},
		{in: "", line: "", block: ""},
	} {
		g := NewWithT(t)
		g.Expect(Line(tc.in)).To(Equal(tc.line), "%q", tc.in)
		g.Expect(Block(tc.in)).To(Equal(tc.block), "%q", tc.in)
		g.Expect(Line(Line(tc.in))).To(Equal(tc.line), "escaping twice: %q", tc.in)
		g.Expect(Block(Block(tc.in))).To(Equal(tc.block), "escaping twice: %q", tc.in)
	}
}
