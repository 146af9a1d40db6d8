/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package a2a is the only place in the operator that knows the A2A wire. The
// controller speaks in the small types below; this package maps them to both
// protocol versions (1.0 and 0.3) through a2a-go.
package a2a

import (
	"context"
	"iter"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// State is a remote task state, one mapping for both protocol versions.
type State string

const (
	StateUnknown       State = "Unknown"
	StateSubmitted     State = "Submitted"
	StateWorking       State = "Working"
	StateInputRequired State = "InputRequired"
	StateAuthRequired  State = "AuthRequired"
	StateCompleted     State = "Completed"
	StateFailed        State = "Failed"
	StateCanceled      State = "Canceled"
	StateRejected      State = "Rejected"
)

// Terminal reports whether the task can no longer change.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the client.
func (s State) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// Artifact is one output of a task, flattened to text where possible.
type Artifact struct {
	Name      string
	MediaType string
	Text      string
	URL       string
}

// Usage is a budget report from the agent (budget extension metadata).
type Usage struct {
	Left  map[string]int64
	Spent map[string]int64
}

// Task is what the operator needs to know of a remote task.
type Task struct {
	ID        string
	ContextID string
	State     State
	// StatusText is the text of the task's status message, if any.
	StatusText string
	// ResultText joins the text parts of the artifacts (or of the final agent
	// message when there are no artifacts).
	ResultText string
	Artifacts  []Artifact
	// FailureClass is what the agent reported in the status message metadata
	// under "failureClass", empty when it said nothing.
	FailureClass string
	// LeaseExpiresAt is the lease the agent granted; zero when none.
	LeaseExpiresAt time.Time
	// Usage is the latest budget report; nil when the agent sent none.
	Usage *Usage
	// MessageIDs are the ids of the client's messages in the history the
	// agent returned (recent ones; empty when it returns no history). They
	// tell which Delegation a task in a shared context belongs to.
	MessageIDs []string
}

// Part is one piece of an outgoing message: exactly one of Text, URL, Data.
type Part struct {
	Text      string
	URL       string
	Data      []byte // JSON
	MediaType string
	Filename  string
}

// LeaseRequest asks the agent to hold the task for TTL after each renewal.
type LeaseRequest struct{ TTL time.Duration }

// BudgetGrant is the budget sent with a task.
type BudgetGrant struct {
	Meters   map[string]int64
	Deadline time.Time // zero: none
}

// SendRequest is one message to send: the first message of a task (TaskID
// empty) or a reply to a task that asked for input.
type SendRequest struct {
	// MessageID is derived by the caller, so a retried send is recognisable.
	MessageID string
	ContextID string
	TaskID    string
	Skill     string
	Text      string
	Parts     []Part
	Metadata  map[string]any
	Lease     *LeaseRequest
	Budget    *BudgetGrant
	// Push asks the agent to post task updates to a receiver; nil for none.
	Push *PushTarget
	// Extensions are further extension URIs to activate for this call (the
	// A2A-Extensions header, X-A2A-Extensions on 0.3), e.g. the one an agent
	// asked for input through; their data travels in Metadata or Parts.
	Extensions []string
}

// PushTarget is where an agent posts push notifications, and the token it
// must present (as A2A-Notification-Token and as a Bearer credential).
type PushTarget struct {
	URL   string
	Token string
}

// Endpoint is how to reach one agent.
type Endpoint struct {
	// URL is the agent's base URL; the card is read from
	// URL + /.well-known/agent-card.json unless CardURL is set.
	URL     string
	CardURL string
	// AllowedOrigins are further origins (scheme://host[:port]) the card's
	// interface may point at. Every request, redirect and interface must be
	// within URL's, CardURL's or one of these origins (see origin.go).
	AllowedOrigins []string
	// Tenant is sent on every call (overrides the card interface's tenant).
	Tenant string
	// Headers are added to every request (as metadata over gRPC); values
	// are secrets: never log them.
	Headers http.Header
	// BearerToken, when set, is asked before every request for the token
	// sent as "Authorization: Bearer <token>" (as metadata over gRPC): a
	// credential that renews itself, such as the operator's ServiceAccount
	// token. It replaces an Authorization header of Headers. Its value is a
	// secret; an error fails the request before anything is sent.
	BearerToken func(context.Context) (string, error)
	// HTTPClient carries TLS settings, the egress policy and the timeout.
	// Nil means a client built by NewHTTPClient with defaults. The gRPC
	// binding applies the same settings (see grpc.go), which it can only read
	// from a client built by NewHTTPClient: any other client is refused there.
	HTTPClient *http.Client
	// MaxResponseBytes bounds every response body, or every response message
	// over gRPC (default 1 MiB).
	MaxResponseBytes int64
	// MaxStreamBytes bounds each event of a stream (SubscribeToTask): a
	// larger one cuts the stream (default DefaultMaxStreamBytes, at most
	// MaxResponseBytes). It also bounds the artifacts a stream's task
	// snapshot holds: a larger result is read with GetTask, so an agent
	// that drips a large event or result holds little of the operator's
	// memory.
	MaxStreamBytes int64
	// CardKeys are the keys the card's signature is verified with (nil:
	// the signature is reported, not verified).
	CardKeys *jose.JSONWebKeySet
}

// Card is what the operator keeps of an agent card.
type Card struct {
	Name              string
	Skills            []Skill
	ProtocolVersion   string // "1.0" or "0.3"
	Binding           string // "JSONRPC", "HTTP+JSON" or "GRPC"
	URL               string // the chosen interface's URL
	Tenant            string // the chosen interface's tenant
	Streaming         bool
	PushNotifications bool
	Lease             bool // declares LeaseExtensionURI
	Budget            bool // declares BudgetExtensionURI
	TraceContext      bool // declares TraceContextExtensionURI
	// Signature is what the card's signatures proved. A card whose
	// signature verified is read from the signed content only.
	Signature CardSignature
}

// Skill is one advertised skill.
type Skill struct{ ID, Name string }

// Client talks to one agent over the interface chosen from its card.
type Client interface {
	// Card is the card the client was built from.
	Card() *Card
	// Send sends a message without waiting for the task to finish
	// (returnImmediately in 1.0, blocking=false in 0.3).
	Send(ctx context.Context, req SendRequest) (*Task, error)
	// Get reads a task. With renewLease the lease extension is activated, which
	// renews the task's lease at agents that grant leases.
	Get(ctx context.Context, taskID string, renewLease bool) (*Task, error)
	// Cancel asks the agent to cancel a task. A task that is already terminal
	// is not an error: Cancel returns it as read back.
	Cancel(ctx context.Context, taskID string) (*Task, error)
	// ListByContext lists the tasks of a context. ErrUnsupported on agents that
	// cannot list (0.3).
	ListByContext(ctx context.Context, contextID string) ([]*Task, error)
	// Subscribe follows a task's events (SubscribeToTask); ErrNoStream at a
	// client that cannot stream.
	Subscribe(ctx context.Context, taskID string) iter.Seq2[StreamEvent, error]
	Close()
}
