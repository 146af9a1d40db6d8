/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package faults

import (
	"fmt"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Tally is what a run left behind. Every task of a run completes at the
// agent, so each Delegation should end Succeeded with the one task it sent.
type Tally struct {
	Delegations int
	// Duplicates counts tasks beyond the first one for a Delegation: a
	// message run twice.
	Duplicates int
	// LostOutcomes counts tasks the agent ran that their Delegation does
	// not record as its outcome.
	LostOutcomes int
	// NeedlessGiveUps counts Delegations that ended without succeeding
	// although the agent never started a task for them.
	NeedlessGiveUps int
	// PastDeadline counts Delegations not settled within their timeout of
	// being created (unsettled ones included).
	PastDeadline int
	// Unsettled counts Delegations that had not ended.
	Unsettled int
	// Examples names a few of the Delegations counted above, with why.
	Examples []string
}

// Clean is true when the run left nothing behind.
func (t Tally) Clean() bool {
	return t.Duplicates == 0 && t.LostOutcomes == 0 && t.NeedlessGiveUps == 0 && t.PastDeadline == 0 && t.Unsettled == 0
}

func (t Tally) String() string {
	return fmt.Sprintf("%d Delegations: %d duplicates, %d lost outcomes, %d needless give-ups, %d past the deadline, %d unsettled",
		t.Delegations, t.Duplicates, t.LostOutcomes, t.NeedlessGiveUps, t.PastDeadline, t.Unsettled)
}

const maxExamples = 5

// Count tallies the Delegations of a run against the tasks the agent
// started for them (Agent.Tasks).
func Count(ds []v1alpha1.Delegation, tasks map[string][]Task) Tally {
	t := Tally{Delegations: len(ds)}
	example := func(d *v1alpha1.Delegation, why string, args ...any) {
		if len(t.Examples) < maxExamples {
			t.Examples = append(t.Examples, d.Name+": "+fmt.Sprintf(why, args...))
		}
	}
	for i := range ds {
		d := &ds[i]
		ran := tasks[d.Name]
		if len(ran) > 1 {
			t.Duplicates += len(ran) - 1
			example(d, "%d tasks at the agent", len(ran))
		}
		succeeded := d.Status.Phase == v1alpha1.PhaseSucceeded
		for _, task := range ran {
			if !succeeded || task.ID != d.Status.TaskID {
				t.LostOutcomes++
				example(d, "task %s ran; the Delegation is %s with task %q", task.ID, d.Status.Phase, d.Status.TaskID)
			}
		}
		ended := d.Status.Phase.Settled()
		if !ended {
			t.Unsettled++
			example(d, "still %q", d.Status.Phase)
		}
		if ended && !succeeded && len(ran) == 0 {
			t.NeedlessGiveUps++
			example(d, "%s without a task at the agent: %s", d.Status.Phase, outcomeOf(d))
		}
		if !ended || settledAfterDeadline(d) {
			t.PastDeadline++
		}
	}
	return t
}

// settledAfterDeadline: the Delegation ended later than its timeout after
// it was created.
func settledAfterDeadline(d *v1alpha1.Delegation) bool {
	if d.Spec.Timeout == nil || d.Status.CompletionTime == nil {
		return false
	}
	// The API server's timestamps are whole seconds.
	deadline := d.CreationTimestamp.Add(d.Spec.Timeout.Duration + time.Second)
	return d.Status.CompletionTime.After(deadline)
}

func outcomeOf(d *v1alpha1.Delegation) string {
	if o := d.Status.Outcome; o != nil {
		return fmt.Sprintf("%s (%s)", o.Reason, o.Message)
	}
	return "no outcome"
}
