/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the budget group.
const (
	CheckBudgetRefuses   = "budget.refuses-invalid"
	CheckBudgetVectors   = "budget.vectors"
	CheckBudgetReport    = "budget.report-on-settle"
	CheckBudgetUngranted = "budget.ungranted-meters-stay-0"
	CheckBudgetDeadline  = "budget.deadline"
	// ungrantedMeter is the only meter the ungranted check grants: the
	// agent's own meter is then granted 0.
	ungrantedMeter = "tether-check-other-meter"
	generousGrant  = 1 << 40
)

var budgetTitles = map[string]string{
	CheckBudgetRefuses:   "an invalid grant is refused with InvalidParams, nothing started",
	CheckBudgetVectors:   "a grant whose deadline passed fails at once, BudgetExhausted",
	CheckBudgetReport:    "the settling update reports spend, within the grant",
	CheckBudgetUngranted: "meters not granted stay 0",
	CheckBudgetDeadline:  "the deadline stops the task",
}

var budgetOrder = []string{CheckBudgetRefuses, CheckBudgetVectors, CheckBudgetReport, CheckBudgetUngranted, CheckBudgetDeadline}

func (r *runner) checkBudget(ctx context.Context) {
	if !r.extensionCheckable(a2a.BudgetExtensionURI, budgetOrder, budgetTitles) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.runSendVectors(ctx, a2a.BudgetExtensionURI, CheckBudgetRefuses, CheckBudgetVectors) })
	wg.Go(func() {
		r.checkBudgetSettle(ctx, CheckBudgetReport, map[string]int64{r.opts.Meter: generousGrant})
		r.checkBudgetSettle(ctx, CheckBudgetUngranted, map[string]int64{ungrantedMeter: generousGrant})
	})
	wg.Go(func() { r.checkBudgetDeadline(ctx) })
	wg.Wait()
}

// checkBudgetSettle sends the quick text with a grant and reads the report
// on the update that settled the task.
func (r *runner) checkBudgetSettle(ctx context.Context, id string, meters map[string]int64) {
	msgID, ctxID := r.ids("budget")
	grant := map[string]any{"meters": meters}
	t, ok := r.sendTask(ctx, id, budgetTitles[id], Fail, fmt.Sprintf(" with grant %v", meters), a2a.ProbeSend{MessageID: msgID,
		ContextID: ctxID, Text: r.opts.Texts.Quick, MessageMetadata: map[string]any{a2a.BudgetExtensionURI: grant}})
	if !ok {
		return
	}
	end, ok := r.waitFor(ctx, r.main, t.ID, r.opts.Within, settled)
	if !ok {
		r.record(id, budgetTitles[id], Must, NotRun, "task %s did not settle in %v (%s)", t.ID, r.opts.Within, end.State)
		return
	}
	report, where := settleReport(end)
	if report == nil {
		r.record(id, budgetTitles[id], Must, Fail, "task %s settled %s without a budget report", t.ID, end.State)
		return
	}
	switch id {
	case CheckBudgetReport:
		for m, n := range report.Spent {
			if n < 0 || n > meters[m] {
				r.record(id, budgetTitles[id], Must, Fail, "task %s reported spent %s: %d, granted %d", t.ID, m, n, meters[m])
				return
			}
		}
		r.record(id, budgetTitles[id], Must, Pass, "task %s %s, %s: spent %v", t.ID, end.State, where, fmtMeters(report.Spent))
	case CheckBudgetUngranted:
		var bad []string
		for _, m := range slices.Sorted(maps.Keys(report.Spent)) {
			if _, granted := meters[m]; !granted && report.Spent[m] != 0 {
				bad = append(bad, fmt.Sprintf("%s: %d", m, report.Spent[m]))
			}
		}
		if len(bad) > 0 {
			r.record(id, budgetTitles[id], Must, Fail, "task %s granted only %s reported spent %v", t.ID, ungrantedMeter, bad)
			return
		}
		seen := fmt.Sprintf("task %s granted only %s: %s, spent %s", t.ID, ungrantedMeter, end.State, fmtMeters(report.Spent))
		if end.FailureClass != "" {
			seen += ", failure class " + end.FailureClass
		}
		r.record(id, budgetTitles[id], Must, Pass, "%s", seen)
	}
}

func (r *runner) checkBudgetDeadline(ctx context.Context) {
	id := CheckBudgetDeadline
	// Whole seconds, as the operator sends deadlines.
	deadline := r.opts.Now().Add(r.opts.Deadline).UTC().Truncate(time.Second).Add(time.Second)
	msgID, ctxID := r.ids("deadline")
	grant := map[string]any{"meters": map[string]int64{r.opts.Meter: generousGrant}, "deadline": deadline.Format(time.RFC3339)}
	meta := r.safetyLease()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[a2a.BudgetExtensionURI] = grant
	t, ok := r.sendTask(ctx, id, budgetTitles[id], Fail, " with deadline "+stamp(deadline),
		a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Long, MessageMetadata: meta})
	if !ok {
		return
	}
	end, ok := r.waitFor(ctx, r.main, t.ID, deadline.Add(r.opts.Within).Sub(r.opts.Now()), terminal)
	switch {
	case !ok:
		r.record(id, budgetTitles[id], Must, Fail, "task %s still %s %v after its deadline %s", t.ID, end.State, r.opts.Within, stamp(deadline))
	case r.opts.Now().Before(deadline) && end.State == a2a.StateCompleted:
		r.record(id, budgetTitles[id], Must, NotRun, "task %s completed before its deadline (text %q)", t.ID, r.opts.Texts.Long)
	default:
		seen := fmt.Sprintf("task %s %s %v after the deadline", t.ID, end.State, max(r.opts.Now().Sub(deadline), 0).Round(r.roundTo()))
		if end.FailureClass != "" {
			seen += ", failure class " + end.FailureClass
		}
		r.record(id, budgetTitles[id], Must, Pass, "%s", seen)
	}
}

// settleReport is the report a client charges: the status message's, else
// the task's.
func settleReport(t *a2a.ProbeTask) (*a2a.BudgetReportMetadata, string) {
	for _, c := range []struct {
		where string
		meta  map[string]any
	}{{whereStatusMessage, t.StatusMetadata}, {whereTaskMetadata, t.Metadata}} {
		raw, ok := c.meta[a2a.BudgetExtensionURI]
		if !ok {
			continue
		}
		b, err := json.Marshal(raw)
		if err != nil {
			continue
		}
		var rep a2a.BudgetReportMetadata
		if json.Unmarshal(b, &rep) == nil {
			return &rep, "report in the " + c.where
		}
	}
	return nil, ""
}

func fmtMeters(m map[string]int64) string {
	if len(m) == 0 {
		return "nothing"
	}
	b, _ := json.Marshal(m)
	return string(b)
}
