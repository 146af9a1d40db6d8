/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"fmt"
	"strings"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the bounds group.
const (
	CheckBoundsIDs     = "bounds.id-lengths"
	CheckBoundsSize    = "bounds.answer-size"
	CheckSchemaAnswers = "schemas.extension-answers"
)

// checkBounds judges what every answer of the run showed.
func (r *runner) checkBounds() {
	r.mu.Lock()
	longest, largest := r.longestID, r.largestBody
	idErrs, sizeErrs, schemaErrs := r.idErrors, r.sizeErrors, r.schemaErrs
	r.mu.Unlock()

	const idsWhat = "task and context ids are at most 256 bytes"
	if len(idErrs) > 0 {
		r.record(CheckBoundsIDs, idsWhat, Must, Fail, "%d answers refused: %s", len(idErrs), firstLine(idErrs[0]))
	} else {
		r.record(CheckBoundsIDs, idsWhat, Must, Pass, "longest id seen: %d bytes", longest)
	}
	sizeWhat := fmt.Sprintf("every answer without history fits in %d KiB", a2a.DefaultMaxResponseBytes>>10)
	if len(sizeErrs) > 0 {
		r.record(CheckBoundsSize, sizeWhat, Must, Fail, "%d answers over the bound: %s", len(sizeErrs), firstLine(sizeErrs[0]))
	} else {
		seen := fmt.Sprintf("largest answer: %d bytes", largest)
		if largest == 0 {
			seen = "no HTTP answer measured (gRPC only)"
		}
		r.record(CheckBoundsSize, sizeWhat, Must, Pass, "%s", seen)
	}
	const schemaWhat = "extension data in answers is valid against its schema"
	if len(schemaErrs) > 0 {
		r.record(CheckSchemaAnswers, schemaWhat, Must, Fail, "%d invalid: %s", len(schemaErrs), strings.Join(schemaErrs[:min(3, len(schemaErrs))], "; "))
	} else {
		r.record(CheckSchemaAnswers, schemaWhat, Must, Pass, "every lease answer, budget report and failure class seen is valid")
	}
}
