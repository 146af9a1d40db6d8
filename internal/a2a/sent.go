/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"errors"
	"net"
)

// NeverSent reports whether a call failed before its request left the
// operator: the connection could not be opened (refused, no route, DNS, the
// egress policy) or the client could not be built. Only then is sending the
// same request again sure not to start a second task; any failure after
// the connection was open may have reached the agent.
func NeverSent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrEgressDenied) {
		return true
	}
	if e, ok := errors.AsType[*Error](err); ok && e.Op == opNewClient {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
