/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"unicode/utf8"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/textsafe"
)

// maxOutcomeMessage is the CRD's bound on status.outcome.message.
const maxOutcomeMessage = 4096

func boundedResult(t *a2a.Task, limit int) *v1alpha1.Result {
	res := &v1alpha1.Result{}
	res.Text, res.Truncated = truncateFlag(t.ResultText, limit)
	for i, a := range t.Artifacts {
		if i == 32 {
			res.Truncated = true
			break
		}
		text, cutText := truncateFlag(a.Text, 4096)
		name, cutName := truncateFlag(a.Name, 256)
		mediaType, cutType := truncateFlag(a.MediaType, 256)
		url := a.URL
		if len(url) > 2048 {
			url = "" // a cut URL points nowhere
		}
		res.Truncated = res.Truncated || cutText || cutName || cutType || url != a.URL
		res.Artifacts = append(res.Artifacts, v1alpha1.Artifact{Name: name, MediaType: mediaType, Text: text, URL: url})
	}
	if res.Text == "" && len(res.Artifacts) == 0 {
		return nil
	}
	return res
}

// truncateFlag cuts s to at most n bytes on a rune boundary.
func truncateFlag(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// truncate bounds a message written to status or an Event; it may quote
// an agent, so its control characters are escaped first.
func truncate(s string, n int) string {
	out, _ := truncateFlag(textsafe.Block(s), n)
	return out
}
