/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import "fmt"

// MessageOnlyReason is the verdict on an agent that answers every task with
// a message.
const MessageOnlyReason = "answers with messages only: tether cannot follow its work"

// Verdict is whether the agent is conformant, and why not.
type Verdict struct {
	// Conformant is true only when every MUST ran and passed.
	Conformant bool `json:"conformant"`
	// Reason names the first MUST that failed or did not run, and what was
	// seen; or says the agent answers with messages only.
	Reason string `json:"reason"`
	// Failed and NotRun are the ids of the MUSTs that failed and that could not run.
	Failed []string `json:"failed,omitempty"`
	NotRun []string `json:"notRun,omitempty"`
}

// Judge decides the verdict from the results: a MUST that failed or could
// not run makes the agent not conformant, and so does answering with
// messages only (every task-level MUST then did not run). A report without
// a single MUST that ran and passed is not conformant either.
func Judge(results []Result, messageOnly bool) Verdict {
	var v Verdict
	var firstFailed, firstNotRun *Result
	passed := 0
	for i, res := range results {
		if res.Level != Must {
			continue
		}
		switch res.Status {
		case Pass:
			passed++
		case Fail:
			v.Failed = append(v.Failed, res.ID)
			if firstFailed == nil {
				firstFailed = &results[i]
			}
		case NotRun:
			v.NotRun = append(v.NotRun, res.ID)
			if firstNotRun == nil {
				firstNotRun = &results[i]
			}
		}
	}
	switch {
	case messageOnly:
		v.Reason = MessageOnlyReason
	case firstFailed != nil:
		v.Reason = fmt.Sprintf("%s failed: %s", firstFailed.ID, firstFailed.Seen)
	case firstNotRun != nil:
		v.Reason = fmt.Sprintf("%s not run: %s", firstNotRun.ID, firstNotRun.Seen)
	case passed == 0:
		v.Reason = "no MUST check ran"
	default:
		v.Conformant = true
		v.Reason = fmt.Sprintf("all %d MUST checks that apply ran and passed", passed)
	}
	return v
}
