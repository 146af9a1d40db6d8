/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import "github.com/tether-dev/tether/internal/textsafe"

// Text in a Delegation's status comes from agents. Printed raw, an escape
// sequence in it could clear the screen, retitle the window, rewrite earlier
// lines or write to the clipboard (OSC 52). The operator escapes what it
// writes; human output escapes again (text written by older operators, or
// by other writers of status), showing every control character as a visible
// escape; `result --raw` keeps the bytes for pipes.

// escapeLine makes s safe as one table cell or field value: every control
// character, newlines and tabs included, becomes visible.
func escapeLine(s string) string { return textsafe.Line(s) }

// escapeBlock makes s safe as a block of text: newlines and tabs are kept,
// every other control character becomes visible.
func escapeBlock(s string) string { return textsafe.Block(s) }
