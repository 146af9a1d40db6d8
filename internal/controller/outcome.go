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

// agentCanList says whether the Agent can list tasks for the operator. A
// 0.3 agent cannot; a 1.0 agent is asked, and a refusal to list (no
// ListTasks, or ListTasks only for authenticated callers) counts as cannot.
func agentCanList(agent *v1alpha1.Agent) bool {
	return agent != nil && agent.Status.ProtocolVersion != a2a.ProtocolV03
}
