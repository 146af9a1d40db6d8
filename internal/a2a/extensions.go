/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import "time"

// The tether A2A extensions (docs/extensions.md). Each is activated with the
// A2A-Extensions request header (X-A2A-Extensions for 0.3 agents); its data
// travels in metadata under the URI.
const (
	LeaseExtensionURI  = "https://tether.dev/a2a/ext/lease/v1"
	BudgetExtensionURI = "https://tether.dev/a2a/ext/budget/v1"
	// TraceContextExtensionURI, declared in an agent's card, asks for the
	// W3C trace context in the message metadata as well as in the headers:
	// for agents behind proxies that drop or replace traceparent, and for
	// agents that read only the message (the form of A2A proposals #2026
	// and #2103: traceparent and tracestate under the extension's URI).
	TraceContextExtensionURI = "https://tether.dev/a2a/ext/trace-context/v1"

	// DelegationMetadataKey carries "namespace/name" of the Delegation that sent
	// a message, so an agent can create child Delegations (agentkit.Delegate).
	DelegationMetadataKey = "https://tether.dev/a2a/delegation"

	// FailureClassMetadataKey is where an agent may report a failure class
	// (InvalidRequest, Transient, PolicyRefusal, BudgetExhausted, Internal) in
	// the metadata of the status message of a failed task.
	FailureClassMetadataKey = "failureClass"

	// MaxLeaseTTL is the default upper bound an agent accepts for a lease.
	MaxLeaseTTL = time.Hour
	// MinLeaseTTL is the lower bound every agent enforces.
	MinLeaseTTL = time.Second
)

// TraceContextMetadata is sent under TraceContextExtensionURI in the
// metadata of SendMessage and CancelTask (where the binding carries
// CancelTask metadata: JSON-RPC and gRPC), to agents that declare it.
type TraceContextMetadata struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// LeaseRequestMetadata is sent under LeaseExtensionURI in SendMessage metadata.
type LeaseRequestMetadata struct {
	TTLSeconds float64 `json:"ttlSeconds"`
}

// LeaseGrantMetadata is answered under LeaseExtensionURI in task metadata.
type LeaseGrantMetadata struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// BudgetRequestMetadata is sent under BudgetExtensionURI in SendMessage metadata.
type BudgetRequestMetadata struct {
	Meters   map[string]int64 `json:"meters,omitempty"`
	Deadline *time.Time       `json:"deadline,omitempty"`
}

// BudgetReportMetadata is carried under BudgetExtensionURI by every status
// update the agent writes; the one that settles the task is what is charged.
type BudgetReportMetadata struct {
	Left  map[string]int64 `json:"left,omitempty"`
	Spent map[string]int64 `json:"spent,omitempty"`
}
