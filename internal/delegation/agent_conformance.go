/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// ConditionConformant is the Agent condition the conformance check writes,
// only when spec.conformance.check asks for it.
const ConditionConformant = "Conformant"

// Reasons of the Conformant condition.
const (
	ReasonMustsPass   = "MustsPass"
	ReasonMustFailed  = "MustFailed"
	ReasonMustNotRun  = "MustNotRun"
	ReasonMessageOnly = "MessageOnly"
	ReasonCheckNotRun = "CheckNotRun"
	// DefaultConformanceInterval is how often the check runs again.
	DefaultConformanceInterval = 24 * time.Hour
)

// ConformanceWanted reports whether an Agent asks for the conformance check.
func ConformanceWanted(a *v1alpha1.Agent) bool {
	return a.Spec.Conformance != nil && a.Spec.Conformance.Check
}

// ConformanceDue decides whether the check runs now: never unless asked
// for and the Agent is Ready for its current spec; at once when it never ran or ran for another
// generation; else once the interval has passed since the last run. When
// not due, wait is how long until it is (0: wait for a change).
func ConformanceDue(a *v1alpha1.Agent, now time.Time) (due bool, wait time.Duration) {
	// Ready must describe this spec: a check against the endpoint of an
	// older one would report on the wrong agent.
	if !ConformanceWanted(a) || !meta.IsStatusConditionTrue(a.Status.Conditions, ConditionReady) ||
		a.Status.ObservedGeneration != a.Generation {
		return false, 0
	}
	st := a.Status.Conformance
	if st == nil || st.LastCheckTime == nil || st.ObservedGeneration != a.Generation {
		return true, 0
	}
	interval := DefaultConformanceInterval
	if i := a.Spec.Conformance.Interval; i != nil && i.Duration > 0 {
		interval = i.Duration
	}
	left := st.LastCheckTime.Add(interval).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// SetAgentConformant derives the Conformant condition from the recorded
// result, so a condition list rewritten by another writer is restored
// without running the check again. It is True only when every MUST ran and
// passed; otherwise its message starts with the verdict (the first MUST that
// failed or did not run). It returns whether anything changed.
func SetAgentConformant(a *v1alpha1.Agent, now time.Time) bool {
	before := meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	var was metav1.Condition
	if before != nil {
		was = *before
	}
	st := a.Status.Conformance
	if !ConformanceWanted(a) || st == nil {
		return meta.RemoveStatusCondition(&a.Status.Conditions, ConditionConformant)
	}
	c := metav1.Condition{Type: ConditionConformant, ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case st.LastCheckTime == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonCheckNotRun, st.Summary
	case st.MessageOnly:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMessageOnly
		c.Message = joinNonEmpty(st.Verdict, st.Summary)
	case len(st.Failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMustFailed
		c.Message = joinNonEmpty("failed: "+strings.Join(st.Failed, ", "), st.Verdict, st.Summary)
	case len(st.NotRun) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMustNotRun
		c.Message = joinNonEmpty("not run: "+strings.Join(st.NotRun, ", "), st.Verdict, st.Summary)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonMustsPass, st.Summary
	}
	c.Message = cutMessage(c.Message)
	meta.SetStatusCondition(&a.Status.Conditions, c)
	now2 := meta.FindStatusCondition(a.Status.Conditions, ConditionConformant)
	return before == nil || was.Status != now2.Status || was.Reason != now2.Reason ||
		was.Message != now2.Message || was.ObservedGeneration != now2.ObservedGeneration
}

func joinNonEmpty(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

// cutMessage keeps a condition message within the API server's bound.
func cutMessage(s string) string {
	const maxMessage = 32768
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage]
}
