/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// none fills an empty cell, as kubectl does.
const none = "-"

// colReason heads the column of outcome and event reasons.
const colReason = "REASON"

// phaseColors are ANSI SGR codes: green done, red failed, magenta waiting for a
// person, cyan working; everything else stays plain or dim.
var phaseColors = map[v1alpha1.Phase]string{
	v1alpha1.PhaseRunning:       "36",
	v1alpha1.PhaseInputRequired: "35",
	v1alpha1.PhaseAuthRequired:  "35",
	v1alpha1.PhaseSucceeded:     "32",
	v1alpha1.PhaseFailed:        "31",
	v1alpha1.PhaseCanceled:      "33",
	v1alpha1.PhaseDetached:      "90",
}

func paint(s, sgr string, color bool) string {
	if !color || sgr == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// formatMeters prints meters sorted by name: "calls=3,tokens=200".
func formatMeters(m v1alpha1.Meters) string {
	if len(m) == 0 {
		return none
	}
	parts := make([]string, 0, len(m))
	for _, name := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, m[name]))
	}
	return strings.Join(parts, ",")
}

func sortedKeys(meters ...v1alpha1.Meters) []string {
	var names []string
	for _, m := range meters {
		for name := range m {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// age is how kubectl prints an object's age.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// timestamp prints a time with how far it is from now, e.g. "2026-11-29T12:00:00Z (5m ago)".
func timestamp(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return none
	}
	rel := duration.HumanDuration(now.Sub(t.Time)) + " ago"
	if t.After(now) {
		rel = "in " + duration.HumanDuration(t.Sub(now))
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// agentOf names the Delegation's Agent (with its namespace when it is
// another namespace's), or says it is a group.
func agentOf(d *v1alpha1.Delegation) string {
	key, ok := d.AgentKey()
	switch {
	case !ok:
		return "(group)"
	case d.SharedAgent():
		return key.String()
	}
	return key.Name
}

func phaseOf(d *v1alpha1.Delegation) string {
	return orNone(string(d.Status.Phase))
}

// reasonOf says why the Delegation is in its phase: the outcome reason, or the
// failure class when the operator gave only that.
func reasonOf(d *v1alpha1.Delegation) string {
	o := d.Status.Outcome
	switch {
	case o == nil:
		return none
	case o.Reason != "":
		return o.Reason
	default:
		return orNone(string(o.FailureClass))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
