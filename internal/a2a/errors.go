/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/tether-dev/tether/internal/textsafe"
)

// ErrorKind says whether the agent answered. The budget ledger depends on it:
// a refused send is refunded, a send that got no answer may have started work
// and is kept.
type ErrorKind string

const (
	// KindRefused: the agent answered and said no (A2A/JSON-RPC error, HTTP
	// error status, auth challenge).
	KindRefused ErrorKind = "Refused"
	// KindTransport: no usable answer (connection refused or reset, DNS,
	// timeout, response too large, undecodable body, egress policy).
	KindTransport ErrorKind = "Transport"
)

// Reasons set on Error.Reason.
const (
	ReasonParseError                   = "ParseError"
	ReasonInvalidRequest               = "InvalidRequest"
	ReasonMethodNotFound               = "MethodNotFound"
	ReasonInvalidParams                = "InvalidParams"
	ReasonInternalError                = "InternalError"
	ReasonServerError                  = "ServerError"
	ReasonTaskNotFound                 = "TaskNotFound"
	ReasonTaskNotCancelable            = "TaskNotCancelable"
	ReasonPushNotificationNotSupported = "PushNotificationNotSupported"
	ReasonUnsupported                  = "Unsupported"
	ReasonContentTypeNotSupported      = "ContentTypeNotSupported"
	ReasonInvalidAgentResponse         = "InvalidAgentResponse"
	ReasonExtendedCardNotConfigured    = "ExtendedCardNotConfigured"
	ReasonExtensionSupportRequired     = "ExtensionSupportRequired"
	ReasonVersionNotSupported          = "VersionNotSupported"
	ReasonUnauthenticated              = "Unauthenticated"
	ReasonPermissionDenied             = "PermissionDenied"
	ReasonNotFound                     = "NotFound"
	ReasonHTTPError                    = "HTTPError"

	ReasonTimeout          = "Timeout"
	ReasonCanceled         = "Canceled"
	ReasonEgressDenied     = "EgressDenied"
	ReasonResponseTooLarge = "ResponseTooLarge"
	ReasonInvalidResponse  = "InvalidResponse"
	ReasonUnreachable      = "Unreachable"
	ReasonTooManyTasks     = "TooManyTasks"
	ReasonNoCredential     = "NoCredential"
)

// Failure classes returned by FailureClassOf.
const (
	FailureClassInvalidRequest = "InvalidRequest"
	FailureClassPolicyRefusal  = "PolicyRefusal"
	FailureClassRejected       = "Rejected"
	FailureClassUnreachable    = "Unreachable"
)

// ErrUnsupported matches (errors.Is) every error saying the agent cannot do
// the operation: ListByContext on 0.3 agents, UnsupportedOperation and
// MethodNotFound answers.
var ErrUnsupported = errors.New("operation not supported by the agent")

// ErrTooManyTasks matches (errors.Is) a look-up by context that would need
// more pages than the operator reads: the list is not returned, so a caller
// never mistakes part of it for all of it.
var ErrTooManyTasks = errors.New("the context holds more tasks than a look-up reads")

// Error is the only error type ResolveCard and Client methods return.
// Its text never contains request headers.
type Error struct {
	Kind ErrorKind
	// Op is the A2A method (or "ResolveCard").
	Op string
	// Code is the A2A/JSON-RPC error code or the HTTP status; 0 if none.
	Code int
	// Reason is a short CamelCase cause, e.g. TaskNotFound, InvalidParams.
	Reason string
	Err    error
	// local: decided before anything was sent (see NeverSent).
	local bool
}

// localError is an error decided before any request was made.
// NotMade marks an error that kept a call from being made at all: its
// client could not be built (a Secret missing or not marked, the Agent
// changed and its card is not read again yet). Nothing reached the agent,
// as with a dial error, so the call may be made again. An a2a error keeps
// its own classification.
func NotMade(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Kind: KindTransport, Op: opNewClient, Reason: ReasonUnreachable, Err: err, local: true}
}

func localError(op, reason string, err error) *Error {
	return &Error{Kind: KindRefused, Op: op, Reason: reason, Err: err, local: true}
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("a2a %s: %s", e.Op, e.Kind)
	if e.Reason != "" {
		msg += " (" + e.Reason
		if e.Code != 0 {
			msg += fmt.Sprintf(", code %d", e.Code)
		}
		msg += ")"
	}
	if e.Err != nil {
		// Causes quote answers (HTTP status lines, bodies): bounded, and
		// escaped, since they reach status, Events and logs.
		cause := textsafe.Line(e.Err.Error())
		if len(cause) > MaxErrorTextBytes {
			cause = cut(cause, MaxErrorTextBytes) + fmt.Sprintf("... (%d bytes cut)", len(cause)-len(cut(cause, MaxErrorTextBytes)))
		}
		msg += ": " + cause
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every "cannot do that" answer match ErrUnsupported.
func (e *Error) Is(target error) bool {
	return target == ErrUnsupported && e.Kind == KindRefused &&
		(e.Reason == ReasonUnsupported || e.Reason == ReasonMethodNotFound)
}

// IsRefused reports whether an answer (or a local check) refused the call:
// its Kind is KindRefused and its class ClassRefused, so nothing
// started. An error answer that does not prove it (HTTP 5xx, 429, an
// agent's InternalError) is not a refusal. Failures that never reached the
// agent (dial errors, egress denial) are not refusals either, though their
// outcome is Refused: they may succeed later (see Classify and NeverSent).
func IsRefused(err error) bool {
	return kindOf(err) == KindRefused && Classify(err) == ClassRefused
}

// IsTransport reports whether the call got no usable answer.
func IsTransport(err error) bool { return kindOf(err) == KindTransport }

// IsTaskNotFound reports whether the agent does not know the task.
func IsTaskNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == ReasonTaskNotFound
}

func kindOf(err error) ErrorKind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return ""
}

// FailureClassOf maps a send error to the failure class recorded on the
// Delegation: InvalidRequest, PolicyRefusal, Rejected or Unreachable. Only a
// Refused outcome (Classify) gets one of the first three; everything else,
// errors of other types included, counts as Unreachable, which keeps (never
// refunds) a reservation.
func FailureClassOf(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) || Classify(err) != ClassRefused || e.Kind != KindRefused {
		return FailureClassUnreachable
	}
	switch e.Reason {
	case ReasonInvalidParams, ReasonInvalidRequest, ReasonContentTypeNotSupported, ReasonParseError:
		return FailureClassInvalidRequest
	case ReasonUnauthenticated, ReasonPermissionDenied:
		return FailureClassPolicyRefusal
	}
	switch e.Code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return FailureClassInvalidRequest
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
		return FailureClassPolicyRefusal
	}
	return FailureClassRejected
}

// a2aErrors maps a2a-go's sentinel errors to their JSON-RPC code and our reason.
var a2aErrors = []struct {
	err    error
	code   int
	reason string
}{
	{a2a.ErrParseError, -32700, ReasonParseError},
	{a2a.ErrInvalidRequest, -32600, ReasonInvalidRequest},
	{a2a.ErrMethodNotFound, -32601, ReasonMethodNotFound},
	{a2a.ErrInvalidParams, -32602, ReasonInvalidParams},
	{a2a.ErrTaskNotFound, -32001, ReasonTaskNotFound},
	{a2a.ErrTaskNotCancelable, -32002, ReasonTaskNotCancelable},
	{a2a.ErrPushNotificationNotSupported, -32003, ReasonPushNotificationNotSupported},
	{a2a.ErrUnsupportedOperation, -32004, ReasonUnsupported},
	{a2a.ErrUnsupportedContentType, -32005, ReasonContentTypeNotSupported},
	{a2a.ErrInvalidAgentResponse, -32006, ReasonInvalidAgentResponse},
	{a2a.ErrExtendedCardNotConfigured, -32007, ReasonExtendedCardNotConfigured},
	{a2a.ErrExtensionSupportRequired, -32008, ReasonExtensionSupportRequired},
	{a2a.ErrVersionNotSupported, -32009, ReasonVersionNotSupported},
	{a2a.ErrUnauthenticated, -31401, ReasonUnauthenticated},
	{a2a.ErrUnauthorized, -31403, ReasonPermissionDenied},
	// Generic ones last: a more specific match wins.
	{a2a.ErrServerError, -32000, ReasonServerError},
	{a2a.ErrInternalError, -32603, ReasonInternalError},
}

// classify turns whatever a2a-go or net/http returned into an *Error. status
// is the HTTP status of the last response seen for the call (0 if none).
func classify(op string, err error, status int, tooLarge bool) error {
	if err == nil {
		return nil
	}
	if done, ok := errors.AsType[*Error](err); ok {
		return done
	}
	e := &Error{Kind: KindTransport, Op: op, Err: err}

	switch {
	case tooLarge || errors.Is(err, ErrResponseTooLarge):
		e.Reason = ReasonResponseTooLarge
		if status >= 200 && status <= 299 {
			e.Err = fmt.Errorf("%w: %w", ErrAnswerTooLarge, err)
		}
		return e
	case errors.Is(err, ErrEgressDenied):
		e.Reason = ReasonEgressDenied
		return e
	case errors.Is(err, ErrOriginNotAllowed):
		e.Kind, e.Reason = KindRefused, ReasonOriginNotAllowed
		return e
	case errors.Is(err, ErrNoCredential):
		// Nothing was sent: the call may be made again (ClassNotMade).
		e.Reason, e.local = ReasonNoCredential, true
		return e
	case errors.Is(err, context.Canceled):
		e.Reason = ReasonCanceled
		return e
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Reason = ReasonTimeout
		return e
	}

	httpError := status != 0 && (status < 200 || status > 299)
	for _, m := range a2aErrors {
		if !errors.Is(err, m.err) {
			continue
		}
		// A bare ErrServerError is what a2a-go reports for a non-JSON error
		// body: the HTTP status says more than the sentinel.
		if httpError && (m.err == a2a.ErrServerError || m.err == a2a.ErrInternalError || m.err == a2a.ErrParseError) {
			break
		}
		e.Kind, e.Code, e.Reason = KindRefused, m.code, m.reason
		return e
	}
	if httpError {
		e.Kind, e.Code, e.Reason = KindRefused, status, reasonForStatus(status)
		return e
	}
	if status != 0 {
		// The agent answered 2xx with something we could not read.
		e.Reason = ReasonInvalidResponse
		return e
	}
	e.Reason = ReasonUnreachable
	return e
}

func reasonForStatus(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusProxyAuthRequired:
		return ReasonUnauthenticated
	case http.StatusForbidden:
		return ReasonPermissionDenied
	case http.StatusNotFound:
		return ReasonNotFound
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return ReasonUnsupported
	}
	return ReasonHTTPError
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
