/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AgentConformance configures the conformance check of an Agent.
type AgentConformance struct {
	// check turns the check on.
	Check bool `json:"check"`
	// interval is how often the check runs again; it also runs when the
	// Agent's spec changes. Default 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="conformance.interval must be at least 1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// AgentConformanceStatus is the result of the last conformance check.
type AgentConformanceStatus struct {
	// lastCheckTime is when the last check ended.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// observedGeneration is the Agent generation the check ran for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// failed are the ids of the MUST checks that failed (the first 32).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	Failed []string `json:"failed,omitempty"`
	// notRun are the ids of the MUST checks that applied but could not run
	// (the first 32): the agent answered with a message, refused the send or
	// never reached the state the check needs. The agent is Conformant only
	// when every MUST ran and passed.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	NotRun []string `json:"notRun,omitempty"`
	// messageOnly is set when the agent answered every task with a message:
	// tether cannot follow its work.
	// +optional
	MessageOnly bool `json:"messageOnly,omitempty"`
	// verdict says why the agent is or is not conformant: the first MUST
	// that failed or did not run, and what the check saw.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Verdict string `json:"verdict,omitempty"`
	// summary counts the results, or says why the check could not run.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Summary string `json:"summary,omitempty"`
}
