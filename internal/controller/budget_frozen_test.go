/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// holdSends holds the test agent's first messages until release is called.
func (e *env) holdSends() (release func()) {
	held := make(chan struct{})
	e.agent.holdSends.Store(&held)
	return func() {
		e.agent.holdSends.Store(nil)
		close(held)
	}
}

// waitSendReached waits until the agent received the first message of name.
func (e *env) waitSendReached(name string) {
	e.t.Helper()
	uid := string(e.get(name).UID)
	e.g.Eventually(func() bool {
		for _, c := range e.agent.Calls("SendMessage") {
			if c.MessageID == delegation.MessageID(uid, -1) {
				return true
			}
		}
		return false
	}, eventually, tick).Should(BeTrue())
}

// A child's budget raised after its parent reserved the grant (between the
// send and its answer, before the child's status shows anything admission
// can see) grants nothing more: the grant is the reservation, and a
// grandchild cannot reserve past it. Once the grant is recorded, admission
// refuses the change outright.
func TestRaisedBudgetAfterTheReservationGrantsNothingMore(t *testing.T) {
	e := setup(t)
	e.create(e.group("root", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("root", v1alpha1.PhaseRunning)

	release := e.holdSends()
	e.create(e.task("child", "wait child", childOf("root"), withBudget(v1alpha1.Meters{tokens: 10})))
	e.waitSendReached("child")
	e.g.Expect(ledger(e.get("root")).Reserved).To(Equal(v1alpha1.Meters{tokens: 10}))
	e.update("child", func(d *v1alpha1.Delegation) {
		d.Spec.Budget.Meters[tokens] = 1_000_000
		d.Spec.Timeout = &metav1.Duration{Duration: 24 * time.Hour}
	})
	release()

	child := e.waitRunning("child")
	e.g.Expect(ledger(child).Granted).To(Equal(v1alpha1.Meters{tokens: 10}), "the grant is the reservation")
	e.g.Expect(ledger(e.get("root")).Reserved).To(Equal(v1alpha1.Meters{tokens: 10}))
	e.g.Eventually(func() []string { return e.warnings("child", "BudgetFrozen") }, eventually, tick).
		Should(ContainElement(ContainSubstring("tokens=10")))

	// Grandchildren draw on the reserved 10, not on the spec's million.
	// modest reserves first, so greedy's reason names what is left after it.
	e.create(e.task("modest", "wait modest", childOf("child"), withBudget(v1alpha1.Meters{tokens: 10})))
	e.waitRunning("modest")
	e.create(e.task("greedy", "wait greedy", childOf("child"), withBudget(v1alpha1.Meters{tokens: 500})))
	greedy := e.waitReason("greedy", v1alpha1.PhasePending, delegation.ReasonBudgetExhausted)
	e.g.Expect(greedy.Status.Outcome.Message).To(ContainSubstring("tokens: wants 500, 0 left"))
	e.g.Expect(ledger(e.get("child")).Reserved).To(Equal(v1alpha1.Meters{tokens: 10}))

	// With the grant in the child's status, admission refuses any change.
	d := e.get("child")
	d.Spec.Budget.Meters[tokens] = 20
	err := k8sClient.Update(context.Background(), d)
	e.g.Expect(err).To(MatchError(ContainSubstring("spec.budget and spec.timeout are immutable once the budget was granted or the task started")))
	d = e.get("child")
	d.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	e.g.Expect(k8sClient.Update(context.Background(), d)).To(MatchError(ContainSubstring("spec.budget and spec.timeout are immutable")))
}

// A user who removes the send marker while the send is on its way, and
// whose send's answer is lost, does not cause a second send: the status
// record of the send comes from the call, and the task is looked up.
func TestARemovedSendMarkerNeverCausesASecondSend(t *testing.T) {
	e := setup(t)
	release := e.holdSends()
	e.agent.dropSends.Store(1) // the agent takes the task, the answer is lost
	e.create(e.task("marked", "wait marked"))
	e.waitSendReached("marked")
	e.g.Expect(e.get("marked").Annotations).To(HaveKey(v1alpha1.AnnotationSendStarted))
	e.update("marked", func(d *v1alpha1.Delegation) { delete(d.Annotations, v1alpha1.AnnotationSendStarted) })
	release()

	d := e.waitRunning("marked")
	e.g.Expect(d.Status.SendStarted).NotTo(BeNil(), "status records the send: %s", statusJSON(d))
	sends := 0
	for _, c := range e.agent.Calls("SendMessage") {
		if c.MessageID == delegation.MessageID(string(d.UID), -1) {
			sends++
		}
	}
	e.g.Expect(sends).To(Equal(1), "one send, whatever the annotation says")
	e.g.Consistently(func() int {
		n := 0
		for _, c := range e.agent.Calls("SendMessage") {
			if strings.HasPrefix(c.MessageID, delegation.MessageID(string(d.UID), -1)) {
				n++
			}
		}
		return n
	}, 2*time.Second, tick).Should(Equal(1))
}
