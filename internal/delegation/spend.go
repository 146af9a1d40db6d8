/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// An agent reports what it spent; tether does not take it on trust. A report
// can only move spend inside what was granted, so no child can give its parent
// more than it had or cost it more than it reserved, and a meter nobody
// granted never reaches status or metric labels.

// ClampReport bounds an agent's spend report by the grant: each meter to
// [0, granted], meters that were not granted dropped. clamped names what was
// changed ("" when the report was taken as is), for a Warning event.
func ClampReport(granted, reported v1alpha1.Meters) (kept v1alpha1.Meters, clamped string) {
	var notes []string
	for _, m := range slices.Sorted(maps.Keys(reported)) {
		n := reported[m]
		limit, ok := granted[m]
		switch {
		case !ok:
			notes = append(notes, fmt.Sprintf("%s: not granted, ignored", boundedName(m)))
			continue
		case n < 0:
			notes = append(notes, fmt.Sprintf("%s: %d reported, counted as 0", m, n))
			n = 0
		case n > limit:
			notes = append(notes, fmt.Sprintf("%s: %d reported, counted as the %d granted", m, n, limit))
			n = limit
		}
		if kept == nil {
			kept = v1alpha1.Meters{}
		}
		kept[m] = n
	}
	if len(notes) > 8 {
		notes = append(notes[:8], fmt.Sprintf("and %d more", len(notes)-8))
	}
	return kept, strings.ToValidUTF8(strings.Join(notes, "; "), "?")
}

// boundedName keeps an invented meter name short enough for an Event.
func boundedName(m string) string {
	q := fmt.Sprintf("%q", m)
	if len(q) > 64 {
		return q[:64] + "…"
	}
	return q
}

// clampCharge bounds what a child is charged by what it reserved: a child
// never costs its parent more than the parent set aside, nor less than 0.
func clampCharge(charge, reservation v1alpha1.Meters) v1alpha1.Meters {
	out := v1alpha1.Meters{}
	for m, n := range charge {
		limit, ok := reservation[m]
		if !ok {
			continue
		}
		out[m] = min(max(n, 0), limit)
	}
	return emptyToNil(out)
}

// addSat and subSat saturate instead of wrapping: ledger values come from
// the API (up to int64) and an overflow would turn "spent" into "left".
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		return addSat(addSat(a, math.MaxInt64), 1)
	}
	return addSat(a, -b)
}
