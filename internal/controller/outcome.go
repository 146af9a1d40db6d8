/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"errors"
	"net/http"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// callResult says what a call to an agent came to. Only an answer from the
// agent that proves nothing started is Refused: an A2A error, an auth
// challenge, a client error status. A gateway's 5xx, 408 and 429 may come
// after the agent took the request, so they are Unknown, as is a dropped
// connection or a timeout; a request that never left is NotSent.
func callResult(err error) delegation.CallResult {
	if err == nil {
		return delegation.CallAccepted
	}
	if a2a.NeverSent(err) {
		return delegation.CallNotSent
	}
	e, ok := errors.AsType[*a2a.Error](err)
	if !ok || e.Kind != a2a.KindRefused {
		return delegation.CallUnknown
	}
	if e.Code >= 100 { // an HTTP status, not an A2A error code
		switch {
		case e.Code == http.StatusNotImplemented, e.Code == http.StatusMethodNotAllowed:
			return delegation.CallRefused
		case e.Code >= 500, e.Code == http.StatusRequestTimeout, e.Code == http.StatusTooManyRequests:
			return delegation.CallUnknown
		}
	}
	return delegation.CallRefused
}

// agentCanList says whether the Agent can list tasks for the operator. A
// 0.3 agent cannot; a 1.0 agent is asked, and a refusal to list (no
// ListTasks, or ListTasks only for authenticated callers) counts as cannot.
func agentCanList(agent *v1alpha1.Agent) bool {
	return agent != nil && agent.Status.ProtocolVersion != a2a.ProtocolV03
}
