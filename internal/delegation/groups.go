/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"slices"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// A group settles from its children's outcomes. Children can be deleted
// once they settle (ttlSecondsAfterFinished, a person, a GitOps prune), so
// a group keeps each settled child's outcome in its own status: written in
// the same update as the child's charge, it never changes afterwards.

// MaxSettledChildren bounds status.settledChildren.
const MaxSettledChildren = 1000

// ChildView is what a group sees of one of its live children.
type ChildView struct {
	UID   string
	Phase v1alpha1.Phase
}

// HasSettledChild reports whether the group recorded the child.
func HasSettledChild(st *v1alpha1.DelegationStatus, uid string) bool {
	return slices.ContainsFunc(st.SettledChildren, func(c v1alpha1.SettledChild) bool { return c.UID == uid })
}

// RecordSettledChild keeps a child's outcome. It is idempotent (a recorded
// child is left as it is) and bounded: when full, a succeeded child's entry
// makes room for one that did not succeed, which can change the group's
// outcome; another success is not kept (it changes only the count).
func RecordSettledChild(st *v1alpha1.DelegationStatus, uid, name string, phase v1alpha1.Phase) bool {
	if HasSettledChild(st, uid) {
		return false
	}
	if len(st.SettledChildren) >= MaxSettledChildren {
		if phase == v1alpha1.PhaseSucceeded {
			return false
		}
		i := slices.IndexFunc(st.SettledChildren, func(c v1alpha1.SettledChild) bool { return c.Phase == v1alpha1.PhaseSucceeded })
		if i < 0 {
			return false
		}
		st.SettledChildren = slices.Delete(st.SettledChildren, i, i+1)
	}
	st.SettledChildren = append(st.SettledChildren, v1alpha1.SettledChild{UID: uid, Name: name, Phase: phase})
	return true
}

// CountChildren counts a parent's children: the live ones by their phase,
// and the recorded ones that are gone by the phase they settled in. A
// recorded child counts once, by its recorded outcome.
func CountChildren(live []ChildView, recorded []v1alpha1.SettledChild) (c v1alpha1.ChildCounts, total int) {
	settled := make(map[string]v1alpha1.Phase, len(recorded))
	for _, r := range recorded {
		settled[r.UID] = r.Phase
	}
	for _, ch := range live {
		if p, ok := settled[ch.UID]; ok {
			Count(&c, p)
			delete(settled, ch.UID)
			continue
		}
		Count(&c, ch.Phase)
	}
	for _, p := range settled {
		Count(&c, p)
	}
	return c, len(live) + len(settled)
}
