/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

func TestNotesKeepThePhaseAndChangeTheMessage(t *testing.T) {
	g := NewWithT(t)
	running := &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning,
		Outcome: &v1alpha1.Outcome{Reason: ReasonSent, Message: "sent as task t1"}}
	rec, ok := Noted(running, "the agent did not answer: reset")
	g.Expect(ok).To(BeTrue())
	g.Expect(rec).To(Equal(Record{Phase: v1alpha1.PhaseRunning, Outcome: v1alpha1.Outcome{Reason: ReasonSent, Message: "the agent did not answer: reset"}}))
	g.Expect(running.Outcome.Message).To(Equal("sent as task t1"), "the status itself is not changed")

	_, ok = Noted(&v1alpha1.DelegationStatus{}, "nothing to note on")
	g.Expect(ok).To(BeFalse())

	g.Expect(SendNoted(&v1alpha1.DelegationStatus{}, "the send did not complete: 502")).
		To(Equal(Progress(v1alpha1.PhasePending, ReasonSending, "the send did not complete: 502")), "a phase is always shown")
	g.Expect(SendNoted(running, "looking").Phase).To(Equal(v1alpha1.PhaseRunning))
}

func TestAfterAReadFailed(t *testing.T) {
	g := NewWithT(t)
	running := &v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, Outcome: &v1alpha1.Outcome{Reason: ReasonSent}}

	lost, ok := AfterReadError(running, &a2a.Error{Kind: a2a.KindRefused, Op: "GetTask", Reason: a2a.ReasonTaskNotFound})
	g.Expect(ok).To(BeTrue())
	g.Expect(lost.Next).To(Equal(ReadSettle))
	g.Expect(lost.Record).To(Equal(Lost()))

	noted, ok := AfterReadError(running, errors.New("connection reset"))
	g.Expect(ok).To(BeTrue())
	g.Expect(noted.Next).To(Equal(ReadGoOn))
	g.Expect(noted.Phase).To(Equal(v1alpha1.PhaseRunning))
	g.Expect(noted.Outcome.Message).To(Equal("the agent did not answer: connection reset"))

	_, ok = AfterReadError(&v1alpha1.DelegationStatus{}, errors.New("connection reset"))
	g.Expect(ok).To(BeFalse(), "nothing is shown before the first outcome")
}
