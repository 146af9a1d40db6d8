/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

// Settled reports a terminal phase: nothing moves a Delegation out of it.
// The operator, agentkit and the kubectl plugin all decide with this one
// function.
func (p Phase) Settled() bool {
	switch p {
	case PhaseSucceeded, PhaseFailed, PhaseCanceled, PhaseDetached:
		return true
	}
	return false
}
