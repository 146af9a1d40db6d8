/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AnnotationSendAttempt records which attempt the send marker
// (AnnotationSendStarted) and its deadline belong to; absent means the
// first. A marker of an earlier attempt says nothing about the current one.
const AnnotationSendAttempt = "delegation.tether.dev/send-attempt"

// MaxAttempts bounds spec.retry.maxAttempts, and with it status.attempts.
const MaxAttempts = 10

// RetryClass is a failure class a retry policy may retry: every class the
// operator records but InvalidRequest, which the same request never cures.
// +kubebuilder:validation:Enum=Transient;Unreachable;Internal;Rejected;PolicyRefusal;BudgetExhausted;LeaseLapsed
type RetryClass string

// RetryPolicy makes a failed task a new attempt: a new A2A task, with its
// own message id, in the same context. A new attempt starts only once the
// last one is known to have ended at the agent or never to have started.
// All attempts share the Delegation's reservation and deadline.
type RetryPolicy struct {
	// maxAttempts counts every attempt, the first one included: 3 is the
	// first attempt and up to two retries.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	MaxAttempts int32 `json:"maxAttempts"`
	// backoff is the wait before each retry.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
	// on lists the failure classes that are retried (status.outcome.failureClass
	// of the attempt that ended). Empty means Transient and Unreachable.
	// LeaseLapsed retries a task whose lease lapsed (the agent did not
	// answer for a whole ttl) once its cancel was confirmed.
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +optional
	On []RetryClass `json:"on,omitempty"`
}

// Backoff is the wait before retry k (k = 1 for the first retry):
// initial × factor^(k-1), at most max.
// +kubebuilder:validation:XValidation:rule="!has(self.initial) || !has(self.max) || duration(self.initial) <= duration(self.max)",message="backoff.initial must not exceed backoff.max"
type Backoff struct {
	// initial is the wait before the first retry (default 1s).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="backoff.initial must be between 0s and 1h"
	// +optional
	Initial *metav1.Duration `json:"initial,omitempty"`
	// max caps every wait (default 5m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="backoff.max must be between 0s and 1h"
	// +optional
	Max *metav1.Duration `json:"max,omitempty"`
	// factor multiplies the wait after each retry (default 2).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Factor *int32 `json:"factor,omitempty"`
}

// Attempt is one attempt of a task that ended: a new A2A task each.
type Attempt struct {
	// attempt is the attempt's number, from 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Attempt int32 `json:"attempt"`
	// taskID is the attempt's remote task id (empty when it never started).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// startTime is when the attempt's send was recorded.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the operator saw the attempt end.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// outcome is what the attempt came to (its message bounded).
	// +optional
	Outcome *Outcome `json:"outcome,omitempty"`
	// spent is what the attempt counts against the Delegation's grant: its
	// agent's report, nothing for a send refused or proven never started,
	// and all that was left to it for any other end.
	// +optional
	Spent Meters `json:"spent,omitempty"`
}
