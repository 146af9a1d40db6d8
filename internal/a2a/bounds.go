/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/tether-dev/tether/internal/textsafe"
)

// Bounds on what an agent may hand the operator. Whatever an agent answers
// can end up in status, Events, logs or metric labels; an object past
// etcd's size limit can never be written again, so nothing from the wire is
// taken unbounded. The string limits match the CRD's maxLength on the status
// fields that keep them.
const (
	// MaxIDLength bounds task and context ids (status.taskID, status.contextID
	// and spec.taskID allow 256). A longer one is an invalid answer, never a
	// value: a cut id would name another task.
	MaxIDLength = 256
	// MaxCardNameLength bounds the card name kept (status.cardName); longer
	// names are cut.
	MaxCardNameLength = 256
	// MaxSkills is how many skills of a card are kept (status.skills).
	MaxSkills = 64
	// MaxSkillFieldLength bounds a skill's id and name. A skill with a longer
	// id is dropped (a cut id would route elsewhere); longer names are cut.
	MaxSkillFieldLength = 256
	// MaxInterfaceURLLength bounds the chosen interface's URL
	// (status.endpoint); a card with a longer one has no usable interface.
	MaxInterfaceURLLength = 2048
	// MaxTenantLength bounds the chosen interface's tenant (status.tenant).
	MaxTenantLength = 256
	// MaxReportedMeters is how many meters of a budget report are kept (the
	// first ones by name); MaxMeterNameLength bounds a meter name, longer
	// ones are dropped.
	MaxReportedMeters  = 32
	MaxMeterNameLength = 63 // as admission allows in spec.budget.meters
	// MaxArtifacts is how many artifacts of a task are decoded.
	MaxArtifacts = 64
	// MaxErrorTextBytes bounds the text of an error built from an answer
	// (a 2 MiB status line must not become a 2 MiB error or log line).
	MaxErrorTextBytes = 1024
	// MaxResponseHeaderBytes bounds the status line and headers of an HTTP
	// answer, and the header list of a gRPC one.
	MaxResponseHeaderBytes = 64 << 10
)

// checkIDs refuses a task whose ids could not be stored: too long, or
// holding control characters (an id cannot be escaped: it must name the
// task at the agent as it is).
func checkIDs(op string, t *Task) error {
	for name, id := range map[string]string{"task id": t.ID, "context id": t.ContextID} {
		if len(id) > MaxIDLength {
			return &Error{Kind: KindTransport, Op: op, Reason: ReasonInvalidAgentResponse,
				Err: fmt.Errorf("the agent answered a %s of %d bytes; at most %d are accepted", name, len(id), MaxIDLength)}
		}
		if textsafe.Line(id) != id {
			return &Error{Kind: KindTransport, Op: op, Reason: ReasonInvalidAgentResponse,
				Err: fmt.Errorf("the agent answered a %s with control characters: %s", name, textsafe.Line(id))}
		}
	}
	return nil
}

// escapeTask escapes the agent's text in a task (see internal/textsafe):
// it reaches status, Events and logs. Texts keep their newlines and tabs;
// names, media types, URLs and the failure class become one line.
func escapeTask(t *Task) *Task {
	t.StatusText, t.ResultText = textsafe.Block(t.StatusText), textsafe.Block(t.ResultText)
	t.FailureClass = textsafe.Line(t.FailureClass)
	for i := range t.Artifacts {
		a := &t.Artifacts[i]
		a.Name, a.MediaType, a.URL = textsafe.Line(a.Name), textsafe.Line(a.MediaType), textsafe.Line(a.URL)
		a.Text = textsafe.Block(a.Text)
	}
	return t
}

// boundMeters keeps at most MaxReportedMeters meters with names of at most
// MaxMeterNameLength bytes, the first ones by name.
func boundMeters(m map[string]int64) map[string]int64 {
	if m == nil {
		return nil
	}
	out := make(map[string]int64, min(len(m), MaxReportedMeters))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(out) == MaxReportedMeters {
			break
		}
		if k != "" && len(k) <= MaxMeterNameLength {
			out[k] = m[k]
		}
	}
	return out
}

// cut returns s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
