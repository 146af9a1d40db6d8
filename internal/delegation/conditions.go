/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Condition types, named as kstatus reads them: Ready is the summary, Reconciling
// says the operator is still working, Stalled says it gave up.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// maxConditionReasonLength is the API server's bound on metav1.Condition.Reason.
const maxConditionReasonLength = 1024

// SetConditions derives Ready, Reconciling and Stalled from status.phase and
// status.outcome. lastTransitionTime moves to now only when a condition's status
// changes, so calling it on every pass writes nothing new when nothing changed.
func SetConditions(d *v1alpha1.Delegation, now time.Time) {
	phase := d.Status.Phase
	if phase == "" {
		phase = v1alpha1.PhasePending
	}
	var outcome v1alpha1.Outcome
	if d.Status.Outcome != nil {
		outcome = *d.Status.Outcome
	}
	phaseReason := string(phase)
	outcomeReason := firstValidReason(outcome.Reason, phaseReason)

	ready := metav1.ConditionFalse
	readyReason := outcomeReason
	reconciling := metav1.ConditionFalse
	stalled := metav1.ConditionFalse
	stalledReason := phaseReason
	reconcilingReason := phaseReason
	if outcome.Reason == ReasonRetryScheduled {
		// kstatus readers see why a Running Delegation has no task: the
		// next attempt waits for its backoff.
		reconcilingReason = ReasonRetryScheduled
	}
	switch phase {
	case v1alpha1.PhaseSucceeded:
		ready, readyReason = metav1.ConditionTrue, phaseReason
	case v1alpha1.PhasePending, v1alpha1.PhaseRunning:
		reconciling = metav1.ConditionTrue
	case v1alpha1.PhaseFailed, v1alpha1.PhaseCanceled:
		stalled = metav1.ConditionTrue
		stalledReason = firstValidReason(outcome.Reason, string(outcome.FailureClass), phaseReason)
	case v1alpha1.PhaseDetached:
		// Whatever the outcome says, the summary is that nobody follows the task.
		readyReason = phaseReason
	}
	// InputRequired and AuthRequired fall through with all three False: the task
	// waits for a person, neither progressing on its own nor failed.

	set := func(condType string, status metav1.ConditionStatus, reason string) {
		meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
			Type:               condType,
			Status:             status,
			Reason:             reason,
			Message:            outcome.Message,
			ObservedGeneration: d.Generation,
			LastTransitionTime: metav1.NewTime(now),
		})
	}
	set(ConditionReady, ready, readyReason)
	set(ConditionReconciling, reconciling, reconcilingReason)
	set(ConditionStalled, stalled, stalledReason)
}

// SetAgentReady writes the Agent's Ready condition.
func SetAgentReady(a *v1alpha1.Agent, ready bool, reason, message string, now time.Time) {
	status := metav1.ConditionFalse
	fallback := "NotReady"
	if ready {
		status, fallback = metav1.ConditionTrue, "Ready"
	}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{
		Type:               ConditionReady,
		Status:             status,
		Reason:             firstValidReason(reason, fallback),
		Message:            message,
		ObservedGeneration: a.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// firstValidReason returns the first candidate the API server would accept as a
// condition reason, so a free-form outcome reason can never make the status
// write fail validation. The last candidate is trusted.
func firstValidReason(candidates ...string) string {
	for _, r := range candidates[:len(candidates)-1] {
		if r != "" && len(r) <= maxConditionReasonLength && len(metav1validation.IsValidConditionReason(r)) == 0 {
			return r
		}
	}
	return candidates[len(candidates)-1]
}
