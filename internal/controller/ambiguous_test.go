/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// Ambiguous answers from real a2a-go agents: the operator resolves them by
// looking, never by guessing.

// warnings returns the notes of the Warning events with reason about one object.
func (e *env) warnings(name, reason string) []string {
	var list eventsv1.EventList
	e.g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Name == name && ev.Reason == reason && ev.Type == "Warning" {
			out = append(out, ev.Note)
		}
	}
	return out
}

// A gateway that forwarded the send and then answered 502 or 504: the agent
// has the task. It is looked up and adopted, not refunded and not sent again.
func TestGatewayErrorAfterTheSendAdoptsTheTask(t *testing.T) {
	for _, status := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := setup(t)
			e.agent.gatewaySends.Store(1)
			e.agent.gatewayStatus.Store(int32(status))
			e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
			e.waitPhase("pool", v1alpha1.PhaseRunning)
			e.create(e.task("child", "slow", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 40})))

			d := e.waitPhase("child", v1alpha1.PhaseSucceeded)
			e.g.Expect(d.Status.Result.Text).To(Equal("slow done"))
			e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1), "exactly one task at the agent")
			e.g.Expect(e.agent.LookUps(d.Status.ContextID)).NotTo(BeEmpty(), "the task was looked up")
			e.g.Eventually(func(g Gomega) {
				b := ledger(e.get("pool"))
				g.Expect(b.Reservations).To(BeEmpty())
				g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 40}), "no refund: the task ran")
				expectExactLedger(g, b)
			}, eventually, tick).Should(Succeed())
		})
	}
}

// A stock a2a-go agent (no authenticator) cannot list tasks for the
// operator. After a lost answer its task can be neither found nor safely
// sent again: the Delegation fails SendOutcomeUnknown, the reservation is
// kept as spent, and the agent holds exactly one task.
func TestGatewayErrorAtAnAgentThatCannotListSettlesSendOutcomeUnknown(t *testing.T) {
	e := setup(t)
	stock := newStockTestAgent()
	t.Cleanup(stock.Close)
	stock.gatewaySends.Store(1)
	stock.gatewayStatus.Store(http.StatusBadGateway)
	e.createAgent("stock", stock.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.create(e.task("child", "slow", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 40}),
		func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "stock" }))

	d := e.waitReason("child", v1alpha1.PhaseFailed, delegation.ReasonSendOutcomeUnknown)
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureUnreachable))
	e.g.Consistently(func() int { return len(stock.Calls("SendMessage")) }, time.Second, tick).Should(Equal(1),
		"never a second task")
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 40}), "kept as spent, not refunded")
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}

// An agent that refuses the send with an A2A error started nothing: the
// reservation is refunded. (The control case of the two above.)
func TestRefusedSendIsRefunded(t *testing.T) {
	e := setup(t)
	e.agent.gatewaySends.Store(1)
	e.agent.gatewayStatus.Store(http.StatusBadRequest) // a client error: the agent refused
	e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.create(e.task("child", "wait", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 40})))
	e.waitReason("child", v1alpha1.PhaseFailed, delegation.ReasonSendRefused)
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(BeEmpty())
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}

// A reply whose answer was lost reached the agent: it is neither given back
// nor sent again, and the task completes with it.
func TestLostReplyAnswerIsNotSentAgain(t *testing.T) {
	e := setup(t)
	e.agent.dropReplies.Store(1)
	e.create(e.task("ask", "input"))
	e.waitPhase("ask", v1alpha1.PhaseInputRequired)
	e.update("ask", func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("blue") })

	d := e.waitPhase("ask", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
	e.g.Expect(d.Status.RepliesSent).To(Equal(int32(1)))
	e.g.Expect(d.Status.ReplyInFlight).To(BeFalse())
	replies := 0
	for _, c := range e.agent.Calls("SendMessage") {
		if c.TaskID != "" {
			replies++
		}
	}
	e.g.Expect(replies).To(Equal(1), "the reply reached the agent once")
}

// Spend an agent reports is clamped to the grant: negative spend cannot
// give the parent more than it had, an invented meter is ignored, and
// overspend costs no more than the reservation. Each is a Warning event.
func TestReportedSpendIsClampedToTheGrant(t *testing.T) {
	e := setup(t)
	e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.create(e.task("liar", "lie", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 30})))
	e.create(e.task("spender", "overspend", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 50})))

	liar := e.waitPhase("liar", v1alpha1.PhaseSucceeded)
	e.g.Expect(ledger(liar).Reported).To(Equal(v1alpha1.Meters{tokens: 0}), "negative counts as 0; the invented meter is dropped")
	spender := e.waitPhase("spender", v1alpha1.PhaseSucceeded)
	e.g.Expect(ledger(spender).Reported).To(Equal(v1alpha1.Meters{tokens: 50}))

	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 50}), "0 + 50")
		g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 50}), "never more than was granted")
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
	e.g.Eventually(func() []string { return e.warnings("liar", "SpendClamped") }, eventually, tick).Should(
		ContainElement(And(ContainSubstring("tokens: -1000000 reported, counted as 0"), ContainSubstring(`"invented": not granted`))))
	e.g.Eventually(func() []string { return e.warnings("spender", "SpendClamped") }, eventually, tick).Should(
		ContainElement(ContainSubstring("counted as the 50 granted")))
}

// replySends counts the replies (messages to an existing task) the agent got.
func (ta *testAgent) replySends() []agentCall {
	var out []agentCall
	for _, c := range ta.Calls("SendMessage") {
		if c.TaskID != "" {
			out = append(out, c)
		}
	}
	return out
}

// The operator stops after it claimed a reply and before it sent it. The
// claim is not lost: the next operator finds the reply missing from the
// task's recent messages and sends it, with the same message id, once.
func TestCrashBetweenReplyClaimAndSendSendsTheReplyOnce(t *testing.T) {
	e := setup(t)
	e.create(e.task("ask", "input"))
	e.waitPhase("ask", v1alpha1.PhaseInputRequired)
	e.op.Stop()

	var crashing atomic.Pointer[operator]
	var once sync.Once
	crashed := make(chan struct{})
	op := startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		r.beforeReplySend = func(ctx context.Context) {
			once.Do(func() {
				crashing.Load().stop()
				close(crashed)
			})
			<-ctx.Done()
		}
	})
	crashing.Store(op)
	e.update("ask", func(d *v1alpha1.Delegation) { d.Spec.Replies = replies("blue") })
	e.g.Eventually(crashed, eventually).Should(BeClosed())
	op.Stop()
	d := e.get("ask")
	e.g.Expect(d.Status.RepliesSent).To(Equal(int32(1)), "claimed")
	e.g.Expect(d.Status.ReplyInFlight).To(BeTrue())
	e.g.Expect(e.agent.replySends()).To(BeEmpty(), "never sent")

	startOperator(t, e.ns, testOptions())
	d = e.waitPhase("ask", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
	e.g.Expect(d.Status.ReplyInFlight).To(BeFalse())
	e.g.Expect(e.agent.replySends()).To(HaveLen(1))
}

// A cancel while the answer to the send is lost and the agent cannot be
// asked yet: the failed look-up is retried, not taken as "nothing to
// cancel", and once the task is found it is cancelled.
func TestCancelDuringALostSendCancelsTheTaskItFinds(t *testing.T) {
	opts := testOptions()
	opts.CancelTimeout = time.Minute
	e := setupWith(t, opts)
	e.agent.dropSends.Store(1)
	e.agent.failLists.Store(true)
	e.create(e.task("lost", "wait"))
	e.g.Eventually(func() int {
		d := e.get("lost")
		return len(e.agent.LookUps(delegation.ContextID(&d.Spec, string(d.UID))))
	}, eventually, tick).Should(BeNumerically(">=", 1))

	e.update("lost", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.g.Consistently(func(g Gomega) {
		d := e.get("lost")
		g.Expect(d.Status.Phase).NotTo(Equal(v1alpha1.PhaseCanceled), "not recorded while the task cannot be found")
	}, 2*time.Second, tick).Should(Succeed())
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1))

	e.agent.failLists.Store(false)
	d := e.waitReason("lost", v1alpha1.PhaseCanceled, delegation.ReasonRequested)
	e.g.Expect(d.Status.TaskID).NotTo(BeEmpty(), "the task the send started was found")
	e.g.Expect(e.agent.Cancelled(d.Status.TaskID)).To(BeTrue())
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1), "never sent twice")
}
