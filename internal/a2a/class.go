/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
)

// Class is what a call's result proves about the remote side. Classify is
// the one place that decides it: the agent I/O layer attaches it to every
// answer, the decisions (refund, re-send, look up) and the call metrics read
// it from there.
type Class string

const (
	// ClassAccepted: the call succeeded.
	ClassAccepted Class = "Accepted"
	// ClassRefused: the answer proves nothing started. Only this class
	// lets a caller refund a reservation or treat a task as never created.
	ClassRefused Class = "Refused"
	// ClassUnknown: the request may have reached the agent and started
	// work. A send that ends Unknown must be looked up before anything else.
	ClassUnknown Class = "Unknown"
	// ClassNotMade: the request never left the operator (its client could
	// not be built, a dial error, the egress policy): nothing reached the
	// agent, so the same call may be made again, even at an agent that
	// cannot list its tasks.
	ClassNotMade Class = "NotMade"
)

// Classify decides the class of a call from the error it returned:
//
//   - nil: Accepted.
//   - NotMade, nothing left the operator and it may be tried again
//     (NeverSent, no answer of any kind): a client that could not be built,
//     a card that could not be fetched, an address the egress policy denies,
//     a dial error (DNS, connection refused, dial timeout) and a failed TLS
//     handshake (no request byte was written).
//   - Refused, nothing left the operator because the operator itself said
//     no (NeverSent, decided locally): a local validation error (empty
//     message, empty task id), a card without a usable interface, a binding
//     tether does not speak, an interface outside the Agent's origins.
//   - Refused, the agent answered no: an A2A or JSON-RPC error decoded from
//     the answer (InvalidParams, TaskNotFound, Unsupported, MethodNotFound,
//     Unauthenticated -31401, PermissionDenied -31403, ...), except the three
//     that do not say whether work began: InternalError (-32603),
//     ServerError (-32000) and InvalidAgentResponse (-32006), which are
//     Unknown; an HTTP 4xx without an A2A body (400, 401, 403, 404, 405, 407,
//     413, 415, 422, ...: a client error means the request was not acted on)
//     and a redirect tether does not follow; over gRPC, a status an agent
//     sends to refuse (InvalidArgument, NotFound, Unauthenticated,
//     PermissionDenied, Unimplemented, FailedPrecondition, AlreadyExists,
//     OutOfRange).
//   - Unknown, everything else: HTTP 5xx (502/503/504 from an ingress or
//     mesh may come after the agent created the task), 408, 429 and 499;
//     timeouts, resets, connection closed mid-answer, a cancelled context,
//     a truncated or undecodable body, an answer over the size bound; over
//     gRPC Unavailable (other than a failed dial), DeadlineExceeded,
//     Canceled, Internal, Unknown, ResourceExhausted, Aborted, DataLoss;
//     errors of any other type.
func Classify(err error) Class {
	if err == nil {
		return ClassAccepted
	}
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return ClassUnknown
	}
	if NeverSent(e) {
		if e.Kind == KindTransport {
			return ClassNotMade
		}
		return ClassRefused
	}
	if e.Kind != KindRefused {
		return ClassUnknown
	}
	switch e.Reason {
	case ReasonInternalError, ReasonServerError, ReasonInvalidAgentResponse,
		"Unknown", "ResourceExhausted", "Aborted", "DataLoss":
		return ClassUnknown
	}
	if e.Code > 0 && !refusingStatus(e.Code) {
		return ClassUnknown
	}
	return ClassRefused
}

// refusingStatus reports whether an HTTP status proves the request was not
// acted on: 3xx (a redirect tether did not follow) and 4xx, except 408
// (the server gave up reading, maybe after acting), 429 (rate limits are also
// applied by proxies after forwarding) and 499 (a proxy's "client closed").
func refusingStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 499:
		return false
	}
	return code >= 300 && code < 500
}

// NeverSent reports whether the request provably never left the operator:
// no byte of it reached the agent, so sending again cannot start a second
// task. This is the only case where an agent that cannot list its tasks may
// be sent to again after a failure.
func NeverSent(err error) bool {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return false
	}
	// An origin outside the Agent's is refused before the request is written.
	if e.local || e.Op == opResolveCard || e.Op == opNewClient || e.Reason == ReasonEgressDenied || e.Reason == ReasonOriginNotAllowed {
		return true
	}
	if e.Kind != KindTransport || errors.Is(e.Err, ErrAnswerTooLarge) {
		return false // an answer came back: the request went out
	}
	return isDialError(e.Err)
}

// isDialError reports whether err happened while connecting, before any
// request byte was written: dial errors (DNS included) and TLS handshake
// failures (the gRPC binding passes its dialer's error through, see
// classifyGRPC).
func isDialError(err error) bool {
	if err == nil {
		return false
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	_, ok := errors.AsType[tls.RecordHeaderError](err)
	return ok
}
