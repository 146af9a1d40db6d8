/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// A send whose client could not be built (a Secret missing) never left the
// operator: it is made again, never taken for one the agent may have.
func TestSendWithoutAClientIsNotSent(t *testing.T) {
	err := a2a.NotMade(errors.New(`reading Secret ns/creds: secrets "creds" not found`))
	if got := a2a.Classify(err); got != a2a.ClassNotMade {
		t.Fatalf("Classify = %s, want %s", got, a2a.ClassNotMade)
	}
	if res, _ := delegation.AfterSend(a2a.Classify(err), false, err.Error(), "until"); res != v1alpha1.SendNotSent {
		t.Fatalf("AfterSend = %s, want %s", res, v1alpha1.SendNotSent)
	}
}

// A send a proxy answered 502 without forwarding it, at an agent that lists:
// once the send's own deadline passed, a look-up the agent answered proves
// it has no task of it, and the same message is sent again. The Delegation
// runs instead of failing, and the agent holds one task.
func TestLostSendTheAgentNeverSawIsSentAgain(t *testing.T) {
	e := setup(t)
	e.agent.lostSends.Store(1)
	e.create(e.task("lost", "hello"))

	d := e.waitPhase("lost", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello"))
	sends := e.agent.Calls("SendMessage")
	e.g.Expect(sends).To(HaveLen(2), "the lost send and the one made again")
	e.g.Expect(sends[1].MessageID).To(Equal(sends[0].MessageID), "the same message id")
	lookUps := e.agent.LookUps(d.Status.ContextID)
	e.g.Expect(lookUps).NotTo(BeEmpty(), "sent again only after a look-up")
}

// At an agent whose card says it streams, a task's end shows through its
// stream: the poll interval is an hour, so no poll can explain it.
func TestStreamingAgentsTaskSettlesWithoutAPoll(t *testing.T) {
	e := setup(t)
	streaming := newStreamingTestAgent()
	t.Cleanup(streaming.Close)
	e.createAgent("streaming", streaming.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.g.Expect(e.waitAgentReady("streaming").Status.Streaming).To(BeTrue())
	e.create(e.kitTask("streamed", "streaming", "slow"))

	d := e.waitPhase("streamed", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("slow done"))
	e.g.Expect(streaming.Calls("SubscribeToTask")).NotTo(BeEmpty(), "followed by its stream")
}

// A stream that sends events of another task is cut and the task is read
// instead: the other task's end is never taken for this one's.
func TestStreamWithAnotherTasksEventsIsCutAndTheTaskRead(t *testing.T) {
	e := setup(t)
	liar := newStreamingTestAgent()
	t.Cleanup(liar.Close)
	liar.lyingStreams.Store(true)
	e.createAgent("liar", liar.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.waitAgentReady("liar")
	e.create(e.kitTask("lied-to", "liar", "wait"))
	d := e.waitRunning("lied-to")

	e.g.Eventually(func() int { return len(liar.Calls("SubscribeToTask")) }, eventually, tick).Should(BeNumerically(">=", 2),
		"cut, and subscribed again")
	e.g.Eventually(func() bool {
		subscribed := false
		for _, c := range liar.Calls("") {
			if c.Method == "SubscribeToTask" {
				subscribed = true
			}
			if subscribed && c.Method == "GetTask" && c.TaskID == d.Status.TaskID {
				return true
			}
		}
		return false
	}, eventually, tick).Should(BeTrue(), "the task was read after the lie")
	e.g.Consistently(func() v1alpha1.Phase { return e.get("lied-to").Status.Phase }, 2*time.Second, tick).
		Should(Equal(v1alpha1.PhaseRunning), "another task's end is not this one's")
}

// Streams count in --max-answer-bytes: under a budget with room for one
// stream, two running tasks at a streaming agent are followed by one
// stream; the other task is polled.
func TestStreamsBeyondTheMemoryBudgetArePolled(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newStreamingTestAgent()}
	t.Cleanup(e.agent.Close)
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		r.Calls.SetMemoryLimit(1<<20, 64<<10) // 12 call places of 64 KiB, 1 stream
	})
	e.createAgent("agent", e.agent.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Second}
	})
	e.g.Expect(e.waitAgentReady("agent").Status.Streaming).To(BeTrue())
	e.create(e.kitTask("first", "agent", "wait"))
	e.create(e.kitTask("second", "agent", "wait"))
	running := []string{e.waitRunning("first").Status.TaskID, e.waitRunning("second").Status.TaskID}
	streamed := func() map[string]bool {
		ids := map[string]bool{}
		for _, c := range e.agent.Calls("SubscribeToTask") {
			ids[c.TaskID] = true
		}
		return ids
	}
	e.g.Eventually(func() int { return len(streamed()) }, eventually, tick).Should(Equal(1), "one task is streamed")
	e.g.Consistently(func() int { return len(streamed()) }, 2*time.Second, tick).Should(Equal(1), "the other is not")
	reads := func(id string) int {
		n := 0
		for _, c := range e.agent.Calls("GetTask") {
			if c.TaskID == id {
				n++
			}
		}
		return n
	}
	for _, id := range running {
		e.g.Eventually(func() int { return reads(id) }, eventually, tick).Should(BeNumerically(">=", 2), "both are read")
	}
}

// An agent that drips a large event on every stream is cut at the stream
// bound and subscribed again after a back-off, and its Delegations are
// still cancelled and deleted at once.
func TestDrippingStreamsAreCutAndTheirDelegationsDeleted(t *testing.T) {
	e := setup(t)
	dripping := newStreamingTestAgent()
	t.Cleanup(dripping.Close)
	dripping.drippingStreams.Store(true)
	e.createAgent("dripping", dripping.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.waitAgentReady("dripping")
	names := []string{"drip-1", "drip-2", "drip-3", "drip-4"}
	for _, name := range names {
		e.create(e.kitTask(name, "dripping", "wait"))
	}
	for _, name := range names {
		e.waitRunning(name)
	}
	e.g.Eventually(func() int { return len(dripping.Calls("SubscribeToTask")) }, eventually, tick).Should(BeNumerically(">=", 2*len(names)),
		"each stream cut (64 KiB arrive within a second) and opened again")
	for _, name := range names {
		e.g.Expect(k8sClient.Delete(context.Background(), e.get(name))).To(Succeed())
	}
	for _, name := range names {
		e.g.Eventually(func() bool { return e.gone(name) }, eventually, tick).Should(BeTrue(), "%s deleted", name)
	}
	e.g.Expect(dripping.Calls("CancelTask")).To(HaveLen(len(names)), "every task cancelled")
}

// A stream that closes after one event is subscribed again only after a
// back-off that grows while streams keep closing: about 1, 2 and 4 s apart,
// not once per event (each subscription also costs the agent a read).
func TestAStreamThatClosesIsSubscribedAgainAfterABackOff(t *testing.T) {
	e := setup(t)
	closing := newStreamingTestAgent()
	t.Cleanup(closing.Close)
	closing.closingStreams.Store(true)
	e.createAgent("closing", closing.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.waitAgentReady("closing")
	e.create(e.kitTask("closed-on", "closing", "wait"))
	e.waitRunning("closed-on")
	subscriptions := func() int { return len(closing.Calls("SubscribeToTask")) }
	e.g.Eventually(subscriptions, eventually, tick).Should(BeNumerically(">=", 2), "subscribed again after the stream closed")
	e.g.Consistently(subscriptions, 4*time.Second, tick).Should(BeNumerically("<=", 5),
		"at most one subscription per back-off step (1 s, 2 s, 4 s, with jitter)")
}

// A send answered with a task id no status can hold (300,000 characters)
// shows a phase at once: Pending, reason Sending, with why; it never goes
// without one until --send-timeout.
func TestUnusableSendAnswerShowsAPhase(t *testing.T) {
	e := setup(t)
	e.agent.hugeTaskIDs.Store(true)
	e.create(e.task("huge", "hello"))
	e.g.Eventually(func(g Gomega) {
		d := e.get("huge")
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonSending))
		g.Expect(d.Status.Outcome.Message).NotTo(BeEmpty(), "it says why")
		g.Expect(len(d.Status.TaskID)).To(BeZero())
	}, 10*time.Second, tick).Should(Succeed(), "a phase well before --send-timeout (20s here)")
}
