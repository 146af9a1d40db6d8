/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import "github.com/tether-dev/tether/api/v1alpha1"

// MayRun reports whether a task may be running at the agent with nothing
// that settled it: a cancel may still be needed.
func MayRun(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus) bool {
	return spec.AgentRef != nil && Started(st) && !Settled(st.Phase) && !spec.Detach
}

// OnDelete decides what a Delegation being deleted does before its
// finalizer lets go: cancel its task the way any cancel is made (the step
// returned, with the reason: its parent went, or it was deleted itself),
// or nothing (ok false) when no task may run, or when it is a Detach child
// whose parent went: the task outlives the object and its lease bounds it.
func OnDelete(o Observation) (step Step, ok bool) {
	if !MayRun(o.Spec, o.Status) {
		return Step{}, false
	}
	reason := ReasonRequested
	if p := o.Parent; p != nil && (!p.Found || p.Deleting) {
		reason = ReasonParentDeleted
	}
	if reason == ReasonParentDeleted && o.Spec.ParentClosePolicy == v1alpha1.ParentClosePolicyDetach {
		return Step{}, false
	}
	return canceled(reason, "the task was cancelled because the Delegation was deleted"), true
}
