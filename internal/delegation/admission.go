/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"slices"
	"strings"
	"time"
)

// Contender is one Delegation of an Agent with spec.maxConcurrentTasks, as
// the admission sees it.
type Contender struct {
	UID     string
	Name    string
	Created time.Time
	// Done: settled or being deleted; it holds no place.
	Done bool
	// Started: its task id or send marker shows; it holds a place.
	Started bool
	// Admitted: admitted by this process and not shown started yet; it
	// holds a place.
	Admitted bool
	// Adopts: it adopts spec.taskID, which starts nothing new.
	Adopts bool
}

// InLine orders contenders the way places go: by creation, then by name.
func InLine(a, b Contender) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Admit decides whether uid may start now under an Agent's limit of
// running tasks: places go in creation order (then by name) to the
// Delegations that wait. running is how many places are held. A place
// uid holds already is its own: it asks again with it (a started child's
// next attempt, or a pass after one that let it through and whose send
// the cache does not show yet) and is admitted.
func Admit(uid string, limit int, all []Contender) (admitted bool, running int) {
	var queue []Contender
	holds := false
	for _, c := range all {
		switch {
		case c.Done:
		case c.Started, c.Admitted:
			running++
			holds = holds || c.UID == uid
		case !c.Adopts:
			queue = append(queue, c)
		}
	}
	if holds {
		return true, running
	}
	slices.SortFunc(queue, InLine)
	for i, c := range queue {
		if i >= limit-running {
			break
		}
		if c.UID == uid {
			return true, running
		}
	}
	return false, running
}

// HeldByPass reports whether a Delegation other than uid holds its place
// only because a pass let it through and the cache does not show its send
// yet. Such a place may be given back within moments (the pass did not
// send after all), and a wake then, reading a cache that may not show uid
// waiting yet, could miss it: uid is to be woken by name.
func HeldByPass(uid string, lines ...[]Contender) bool {
	for _, all := range lines {
		if slices.ContainsFunc(all, func(c Contender) bool { return c.Admitted && !c.Done && c.UID != uid }) {
			return true
		}
	}
	return false
}
