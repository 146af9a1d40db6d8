/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package textsafe makes text from agents safe to show. Agent answers end
// up in status, Events and logs, which kubectl describe, dashboards and
// terminals show as they are: an escape sequence could clear the screen,
// retitle the window, rewrite earlier lines or write to the clipboard
// (OSC 52), and a bidirectional override reorders what the reader sees.
// Escape shows every such character as a visible escape instead.
package textsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line makes s safe as one line: every control character, newlines and
// tabs included, becomes visible.
func Line(s string) string { return Escape(s, false) }

// Block makes s safe as a block of text: newlines and tabs are kept, every
// other control character becomes visible.
func Block(s string) string { return Escape(s, true) }

// Escape shows C0 controls in caret notation (ESC is ^[, as terminals and
// kubectl show it), \n, \t and \r as backslash escapes (unless keepLayout
// keeps newlines and tabs), C1 controls and bidirectional formatting
// characters as \uXXXX, and bytes that are not UTF-8 as \xXX. Text without
// any of them is returned as it is, and escaping twice changes nothing more.
func Escape(s string, keepLayout bool) string {
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
			b.WriteByte('^')
			b.WriteByte(byte(r) ^ 0x40)
		case r >= 0x80 && r <= 0x9f, IsBidiControl(r):
			// C1 controls (a one-byte CSI is U+009B) and bidirectional
			// formatting, which reorders what the reader sees.
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
		if (r == utf8.RuneError && size == 1) || r == 0x7f || (r >= 0x80 && r <= 0x9f) || IsBidiControl(r) {
			return true
		}
		if r < 0x20 && (!keepLayout || (r != '\n' && r != '\t')) {
			return true
		}
		i += size
	}
	return false
}

// IsBidiControl reports the Unicode bidirectional formatting characters:
// embeddings, overrides and isolates (the "Trojan Source" characters), the
// directional marks, and the Arabic letter mark.
func IsBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}
