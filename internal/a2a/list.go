/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrCannotList matches (errors.Is) a ListTasks answer saying this caller
// cannot list tasks at this agent: protocol 0.3 (no ListTasks), the method
// unsupported or unknown (UnsupportedOperation, MethodNotFound, a REST 404 or
// 405/501, gRPC Unimplemented, VersionNotSupported), or the caller not
// allowed to (Unauthenticated -31401, PermissionDenied -31403, HTTP 401/403):
// a default a2a-go handler without an authenticator answers Unauthenticated.
// Every such error also matches ErrUnsupported.
var ErrCannotList = errors.New("this caller cannot list the agent's tasks")

// cannotList marks a ListTasks error that means "cannot list".
func cannotList(err error) error {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Kind != KindRefused || errors.Is(e.Err, ErrCannotList) {
		return err
	}
	switch e.Reason {
	case ReasonUnsupported, ReasonMethodNotFound, ReasonNotFound, ReasonVersionNotSupported,
		ReasonUnauthenticated, ReasonPermissionDenied:
		e.Err = fmt.Errorf("%w: %w", ErrCannotList, e.Err)
		e.Reason = ReasonUnsupported
	}
	return err
}

// ListCapability is what a probe found out about listing tasks.
type ListCapability string

const (
	// ListSupported: ListTasks answered for this caller.
	ListSupported ListCapability = "Supported"
	// ListUnsupported: the agent cannot list tasks for this caller
	// (ErrCannotList), so a task whose send answer was lost cannot be found.
	ListUnsupported ListCapability = "Unsupported"
	// ListUnknown: the probe got no usable answer; keep what was known.
	ListUnknown ListCapability = ""
)

// ProbeListing asks the agent, as this caller, for the tasks of a fresh
// random context (at most one page): an empty answer shows listing works, a
// "cannot list" answer shows it does not. Any other error (the agent down, a
// 5xx) is ListUnknown with the error.
func ProbeListing(ctx context.Context, c Client) (ListCapability, error) {
	_, err := c.ListByContext(ctx, "tether-probe-"+rand.Text())
	switch {
	case err == nil:
		return ListSupported, nil
	case errors.Is(err, ErrCannotList):
		return ListUnsupported, nil
	}
	return ListUnknown, err
}
