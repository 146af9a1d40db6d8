/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// callResult says what a call to an agent came to, from a2a.Classify. It
// adds one distinction the send needs: a request that never left the
// operator (a dial error, the egress policy) is NotSent, not Refused, so it
// is made again (until --send-timeout) instead of failing the Delegation.
func callResult(err error) delegation.CallResult {
	if err != nil && a2a.NeverSent(err) && a2a.IsTransport(err) {
		return delegation.CallNotSent
	}
	switch a2a.Classify(err) {
	case a2a.OutcomeAccepted:
		return delegation.CallAccepted
	case a2a.OutcomeRefused:
		return delegation.CallRefused
	}
	return delegation.CallUnknown
}

// agentCanList says whether the Agent can list tasks for the operator, as
// probed when its card was read (status.canListTasks); before a probe got an
// answer, a 0.3 agent cannot and a 1.0 agent is asked (a refusal to list
// then counts as cannot).
func agentCanList(agent *v1alpha1.Agent) bool {
	if agent == nil {
		return false
	}
	if can := agent.Status.CanListTasks; can != nil {
		return *can
	}
	return agent.Status.ProtocolVersion != a2a.ProtocolV03
}
