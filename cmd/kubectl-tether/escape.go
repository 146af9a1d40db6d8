/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text in a Delegation's status comes from agents. Printed raw, an escape
// sequence in it could clear the screen, retitle the window, rewrite earlier
// lines or write to the clipboard (OSC 52). Human output therefore shows every
// control character as a visible escape; `result --raw` keeps the bytes for pipes.

// escapeLine makes s safe as one table cell or field value: every control
// character, newlines and tabs included, becomes visible.
func escapeLine(s string) string { return escapeControls(s, false) }

// escapeBlock makes s safe as a block of text: newlines and tabs are kept,
// every other control character becomes visible.
func escapeBlock(s string) string { return escapeControls(s, true) }

func escapeControls(s string, keepLayout bool) string {
	if !needsEscape(s, keepLayout) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			// Caret notation, as terminals and kubectl show them: ESC is ^[.
			b.WriteByte('^')
			b.WriteByte(byte(r) ^ 0x40)
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
			// C1 controls (a one-byte CSI is U+009B) and bidirectional
			// overrides, which reorder what the reader sees.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, keepLayout bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidiControl(r) {
			return true
		}
		if r < 0x20 && (!keepLayout || (r != '\n' && r != '\t')) {
			return true
		}
		i += size
	}
	return false
}

// isBidiControl reports the Unicode bidirectional embedding, override and
// isolate characters.
func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f
}
