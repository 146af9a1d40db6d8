/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func TestTaskCompletesWithResult(t *testing.T) {
	e := setup(t)
	e.create(e.task("hello", "hello there"))
	d := e.waitPhase("hello", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result).NotTo(BeNil())
	e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello there"))
	e.g.Expect(d.Status.CompletionTime).NotTo(BeNil())
	e.g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
	e.g.Expect(d.Finalizers).To(ContainElement(v1alpha1.Finalizer))

	sends := e.agent.Calls("SendMessage")
	e.g.Expect(sends).To(HaveLen(1))
	e.g.Expect(sends[0].MessageID).To(Equal(delegation.MessageID(string(d.UID), -1)))
	e.g.Expect(sends[0].ContextID).To(Equal(delegation.ContextID(&d.Spec, string(d.UID))))
}

func TestRemoteFailureSettlesFailed(t *testing.T) {
	e := setup(t)
	e.create(e.task("broken", "fail please"))
	d := e.waitPhase("broken", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRemoteFailed))
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureInternal))
	e.g.Expect(d.Status.Outcome.Message).To(Equal("it broke"))
}

// An agent's message longer than status allows is cut, on a rune boundary,
// instead of failing every status write.
func TestLongAgentMessageIsBounded(t *testing.T) {
	e := setup(t)
	e.create(e.task("verbose", "fail-long"))
	d := e.waitPhase("verbose", v1alpha1.PhaseFailed)
	e.g.Expect(len(d.Status.Outcome.Message)).To(BeNumerically("<=", 4096))
	e.g.Expect(len(d.Status.Outcome.Message)).To(BeNumerically(">", 4000))
	e.g.Expect(utf8.ValidString(d.Status.Outcome.Message)).To(BeTrue())
}

// Cancelling the root of a three-level tree reaches every unsettled
// descendant's agent.
func TestCancelRootCancelsEveryDescendant(t *testing.T) {
	e := setup(t)
	e.create(e.task("root", "wait root"))
	e.create(e.task("child", "wait child", childOf("root")))
	e.create(e.task("grandchild", "wait grandchild", childOf("child")))
	tasks := map[string]string{}
	for _, n := range []string{"root", "child", "grandchild"} {
		tasks[n] = e.waitRunning(n).Status.TaskID
	}
	e.g.Expect(metav1.GetControllerOf(e.get("grandchild")).Name).To(Equal("child"))

	e.update("root", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })

	e.g.Expect(e.waitPhase("root", v1alpha1.PhaseCanceled).Status.Outcome.Reason).To(Equal(delegation.ReasonRequested))
	for _, n := range []string{"child", "grandchild"} {
		e.g.Expect(e.waitPhase(n, v1alpha1.PhaseCanceled).Status.Outcome.Reason).To(Equal(delegation.ReasonParentEnded))
	}
	for n, id := range tasks {
		e.g.Expect(e.agent.Cancelled(id)).To(BeTrue(), "agent received no CancelTask for %s", n)
	}
}

func TestChildIsCancelledWhenParentCompletesEarly(t *testing.T) {
	e := setup(t)
	e.create(e.task("parent", "slow parent"))
	e.waitRunning("parent")
	e.create(e.task("child", "wait child", childOf("parent")))
	id := e.waitRunning("child").Status.TaskID

	e.waitPhase("parent", v1alpha1.PhaseSucceeded)
	d := e.waitPhase("child", v1alpha1.PhaseCanceled)
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonParentEnded))
	e.g.Expect(e.agent.Cancelled(id)).To(BeTrue())
}

func TestDetachChildKeepsRunningWhenParentEnds(t *testing.T) {
	e := setup(t)
	e.create(e.task("parent", "slow parent"))
	e.waitRunning("parent")
	e.create(e.task("child", "wait child", childOf("parent"), func(d *v1alpha1.Delegation) {
		d.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach
	}))
	id := e.waitRunning("child").Status.TaskID

	e.waitPhase("parent", v1alpha1.PhaseSucceeded)
	// The child keeps being followed for several polls after its parent ended.
	e.g.Consistently(func() v1alpha1.Phase { return e.get("child").Status.Phase }, 2*time.Second, tick).Should(Equal(v1alpha1.PhaseRunning))
	e.g.Expect(e.agent.Cancelled(id)).To(BeFalse())
}

func TestDeadlineCancelsTheTask(t *testing.T) {
	e := setup(t)
	e.create(e.task("bounded", "wait forever", func(d *v1alpha1.Delegation) {
		d.Spec.Timeout = &metav1.Duration{Duration: time.Second}
	}))
	d := e.waitPhase("bounded", v1alpha1.PhaseFailed)
	id := d.Status.TaskID
	e.g.Expect(id).NotTo(BeEmpty(), "the task was sent before the deadline")
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureBudgetExhausted))
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonDeadline))
	e.g.Expect(e.agent.Cancelled(id)).To(BeTrue())
}

func TestInputRequiredThenReplyCompletesTheSameTask(t *testing.T) {
	e := setup(t)
	e.create(e.task("ask", "input please"))
	d := e.waitPhase("ask", v1alpha1.PhaseInputRequired)
	id := d.Status.TaskID
	e.g.Expect(d.Status.Outcome.Message).To(Equal("which colour?"))
	// Handed back to a person: no cancel, no reply sent on its own.
	e.g.Consistently(func() v1alpha1.Phase { return e.get("ask").Status.Phase }, time.Second, tick).Should(Equal(v1alpha1.PhaseInputRequired))

	e.update("ask", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "blue"}) })
	d = e.waitPhase("ask", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.TaskID).To(Equal(id))
	e.g.Expect(d.Status.RepliesSent).To(Equal(int32(1)))
	e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))

	sends := e.agent.Calls("SendMessage")
	e.g.Expect(sends).To(HaveLen(2), "each reply is sent exactly once")
	e.g.Expect(sends[1].TaskID).To(Equal(id))
	e.g.Expect(sends[1].Text).To(Equal("blue"))
	e.g.Expect(e.agent.Cancelled(id)).To(BeFalse())
}

// A reply appended while the scheduler's read of the task is on its way is
// sent: that read's unchanged answer is never handed on, so the read the
// reconciler asks for must not be dropped behind it.
func TestReplyAddedDuringAScheduledReadIsSent(t *testing.T) {
	e := setup(t)
	slow := newTestAgent()
	t.Cleanup(slow.Close)
	e.createAgent("slow", slow.URL(), pollEvery(200*time.Millisecond))
	slow.slowGets.Store(int64(150 * time.Millisecond)) // a read is on its way 3/4 of the time
	const n = 6
	for i := range n {
		e.create(e.task(fmt.Sprintf("ask-%d", i), "input please", func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "slow" }))
	}
	for i := range n {
		e.waitPhase(fmt.Sprintf("ask-%d", i), v1alpha1.PhaseInputRequired)
	}
	for i := range n {
		e.update(fmt.Sprintf("ask-%d", i), func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "blue"}) })
	}
	for i := range n {
		d := e.waitPhase(fmt.Sprintf("ask-%d", i), v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
	}
	e.g.Expect(slow.Calls("SendMessage")).To(HaveLen(2*n), "each task's message and its one reply")
}

func TestDeletingSendsCancelBeforeTheObjectDisappears(t *testing.T) {
	e := setup(t)
	e.create(e.task("doomed", "wait"))
	id := e.waitRunning("doomed").Status.TaskID
	e.g.Expect(e.agent.Cancelled(id)).To(BeFalse())

	e.g.Expect(k8sClient.Delete(context.Background(), e.get("doomed"))).To(Succeed())
	e.g.Eventually(func() bool {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "doomed"}, &v1alpha1.Delegation{})
		return apierrors.IsNotFound(err)
	}, eventually, tick).Should(BeTrue())
	// The finalizer let go only after the agent had the cancel.
	e.g.Expect(e.agent.Cancelled(id)).To(BeTrue())
}

func TestUnreachableAgentDoesNotHoldTheFinalizer(t *testing.T) {
	e := setup(t)
	e.create(e.task("orphan", "wait"))
	e.waitRunning("orphan")
	e.agent.Close() // the agent is gone; cancels cannot reach it

	deleted := time.Now()
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("orphan"))).To(Succeed())
	e.g.Eventually(func() bool {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "orphan"}, &v1alpha1.Delegation{})
		return apierrors.IsNotFound(err)
	}, eventually, tick).Should(BeTrue())
	// It was held while the cancel was retried, up to the bound.
	// (deletionTimestamp has whole seconds, so the bound may end up to 1s early).
	e.g.Expect(time.Since(deleted)).To(BeNumerically(">=", testOptions().CancelTimeout-time.Second))
}

// The agent takes the task but the answer is lost, as when the operator
// stops between the send and its status write; the next operator finds the
// task by its context instead of sending again.
func TestRestartBetweenSendAndStatusWriteDoesNotSendTwice(t *testing.T) {
	e := setup(t)
	e.op.Stop()
	e.agent.dropSends.Store(1)
	// While the agent cannot list, the first operator can neither adopt the
	// task nor safely send again: it waits.
	e.agent.failLists.Store(true)
	first := startOperator(t, e.ns, testOptions())
	e.create(e.task("once", "wait"))
	e.g.Eventually(func() int {
		d := e.get("once")
		return len(e.agent.LookUps(delegation.ContextID(&d.Spec, string(d.UID))))
	}, eventually, tick).Should(BeNumerically(">=", 1))
	e.g.Consistently(func() int { return len(e.agent.Calls("SendMessage")) }, 2*time.Second, tick).Should(Equal(1),
		"a failed look-up is retried, never answered with a second send")
	first.Stop()
	e.agent.failLists.Store(false)
	stopped := e.get("once")
	e.g.Expect(stopped.Status.SendStarted).NotTo(BeNil(), "the send was recorded before it was made")
	e.g.Expect(stopped.Status.TaskID).To(BeEmpty(), "the answer was lost, so no task id was written")

	startOperator(t, e.ns, testOptions())
	d := e.waitRunning("once")
	e.g.Expect(d.Status.TaskID).NotTo(BeEmpty())
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1), "the task was adopted, not sent twice")
	e.g.Expect(e.agent.Calls("ListTasks")).NotTo(BeEmpty())
}

// ListTasks answers without artifacts: a task that finished before it was
// adopted is read in full, so its result is not lost.
func TestTaskFinishedBeforeAdoptionKeepsItsResult(t *testing.T) {
	e := setup(t)
	e.agent.dropSends.Store(1)
	e.create(e.task("quick", "hello"))
	d := e.waitPhase("quick", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1), "the task was adopted, not sent twice")
	e.g.Expect(e.agent.Calls("ListTasks")).NotTo(BeEmpty())
	e.g.Expect(d.Status.Result).NotTo(BeNil())
	e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello"))
}

func TestAdoptExistingTaskByID(t *testing.T) {
	e := setup(t)
	e.create(e.task("first", "wait"))
	id := e.waitRunning("first").Status.TaskID
	e.update("first", func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
	e.g.Expect(e.waitPhase("first", v1alpha1.PhaseDetached).Status.TaskID).To(Equal(id))
	e.g.Expect(e.agent.Cancelled(id)).To(BeFalse())

	e.create(e.task("again", "", func(d *v1alpha1.Delegation) { d.Spec.Message = nil; d.Spec.TaskID = id }))
	d := e.waitRunning("again")
	e.g.Expect(d.Status.TaskID).To(Equal(id))
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1))
}

func TestGroupSettlesWhenChildrenSettle(t *testing.T) {
	e := setup(t)
	e.create(&v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "group"}})
	e.waitPhase("group", v1alpha1.PhaseRunning)
	e.create(e.task("a", "one", childOf("group")))
	e.create(e.task("b", "two", childOf("group")))
	d := e.waitPhase("group", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Children).To(Equal(&v1alpha1.ChildCounts{Succeeded: 2}))
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(2))
}

// GitOps applies in any order: a child created before its parent waits.
func TestChildWaitsForItsParent(t *testing.T) {
	e := setup(t)
	e.create(e.task("early", "hi", childOf("late")))
	d := e.waitPhase("early", v1alpha1.PhasePending)
	e.g.Eventually(func() string { return e.get("early").Status.Outcome.Reason }, eventually, tick).Should(Equal(delegation.ReasonParentNotFound))
	e.g.Expect(d.Status.TaskID).To(BeEmpty())
	e.create(e.task("late", "wait"))
	e.waitPhase("early", v1alpha1.PhaseSucceeded)
	e.g.Expect(metav1.GetControllerOf(e.get("early")).Name).To(Equal("late"))
}

func TestTTLAfterFinishedDeletes(t *testing.T) {
	e := setup(t)
	e.create(e.task("brief", "hi", func(d *v1alpha1.Delegation) { d.Spec.TTLSecondsAfterFinished = ptr.To[int32](1) }))
	e.g.Eventually(func() bool {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "brief"}, &v1alpha1.Delegation{})
		return apierrors.IsNotFound(err)
	}, eventually, tick).Should(BeTrue())
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(1))
}

func TestMissingAgentWaitsThenRuns(t *testing.T) {
	e := setup(t)
	e.create(e.task("lonely", "hi", func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "later" }))
	e.g.Eventually(func() string {
		o := e.get("lonely").Status.Outcome
		if o == nil {
			return ""
		}
		return o.Reason
	}, eventually, tick).Should(Equal(delegation.ReasonAgentNotFound))
	e.createAgent("later", e.agent.URL())
	e.waitPhase("lonely", v1alpha1.PhaseSucceeded)
}

// parentRef chains are checked before anything is sent: a cycle, or a chain
// deeper than --max-depth, fails as InvalidRequest.
func TestCyclesAndDeepChainsAreRefused(t *testing.T) {
	opts := testOptions()
	opts.MaxDepth = 2
	e := setupWith(t, opts)
	e.create(e.task("a", "wait", childOf("b")))
	e.create(e.task("b", "wait", childOf("a")))
	for _, n := range []string{"a", "b"} {
		d := e.waitPhase(n, v1alpha1.PhaseFailed)
		e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonInvalidTree))
		e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureInvalidRequest))
		e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("cycle"))
	}

	e.create(e.task("root", "wait"))
	e.create(e.task("one", "wait", childOf("root")))
	e.create(e.task("two", "wait", childOf("one")))
	e.waitRunning("two")
	e.create(e.task("three", "wait", childOf("two")))
	d := e.waitPhase("three", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("deeper than 2"))
	e.g.Expect(d.Status.TaskID).To(BeEmpty())
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(3), "root, one and two were sent; three never")
}

// An agent that fails for a while is retried at the task's poll interval,
// not with a backoff that grows through the outage (a lease would lapse).
func TestAgentOutageIsRetriedAtThePollInterval(t *testing.T) {
	e := setup(t)
	e.create(e.task("patient", "wait"))
	e.waitRunning("patient")
	e.agent.failGets.Store(true)
	e.g.Eventually(func() string { return e.get("patient").Status.Outcome.Message }, eventually, tick).
		Should(ContainSubstring("the agent did not answer"))
	// Six seconds of failures would have grown a backoff past 5 s.
	time.Sleep(6 * time.Second)
	e.agent.failGets.Store(false)
	recovered, before := time.Now(), len(e.agent.Calls("GetTask"))
	e.g.Eventually(func() int { return len(e.agent.Calls("GetTask")) }, eventually, 20*time.Millisecond).Should(BeNumerically(">", before))
	e.g.Expect(time.Since(recovered)).To(BeNumerically("<", 3*time.Second), "polled again at the poll interval (200ms), not after a backoff")
	e.g.Expect(e.get("patient").Status.Phase).To(Equal(v1alpha1.PhaseRunning))
}

// A group's own deadline ends it even when no child wakes it.
func TestGroupDeadlineIsEnforced(t *testing.T) {
	e := setup(t)
	e.create(&v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "idle"},
		Spec: v1alpha1.DelegationSpec{Timeout: &metav1.Duration{Duration: time.Second}}})
	d := e.waitPhase("idle", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureBudgetExhausted))
}

// The garbage collector deletes a Detach child with its parent; the child's
// task is left running (its lease bounds it), not cancelled.
func TestDeletingTheParentLeavesDetachChildrenRunning(t *testing.T) {
	e := setup(t)
	e.create(e.task("parent", "wait"))
	parentTask := e.waitRunning("parent").Status.TaskID
	e.create(e.task("free", "wait", childOf("parent"), func(d *v1alpha1.Delegation) {
		d.Spec.ParentClosePolicy = v1alpha1.ParentClosePolicyDetach
	}))
	childTask := e.waitRunning("free").Status.TaskID

	e.g.Expect(k8sClient.Delete(context.Background(), e.get("parent"))).To(Succeed())
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(context.Background(), clientKey(e.get("free")), &v1alpha1.Delegation{})) ||
			e.agent.Cancelled(parentTask)
	}, eventually, tick).Should(BeTrue())
	// What the garbage collector would do next.
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("free"))).To(Succeed())
	e.g.Eventually(func() bool {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "free"}, &v1alpha1.Delegation{})
		return apierrors.IsNotFound(err)
	}, eventually, tick).Should(BeTrue())
	e.g.Expect(e.agent.Cancelled(parentTask)).To(BeTrue())
	e.g.Expect(e.agent.Cancelled(childTask)).To(BeFalse(), "a Detach child's task is never cancelled for its parent")
}

// Two Delegations share a context; the second one's answer is lost. It
// finds its own task by its message id, not its sibling's, and sends once.
func TestLostAnswerInASharedContextAdoptsItsOwnTask(t *testing.T) {
	e := setup(t)
	shared := func(d *v1alpha1.Delegation) { d.Spec.Message.ContextID = "shared-context" }
	e.create(e.task("first", "wait", shared))
	first := e.waitRunning("first").Status.TaskID
	e.agent.dropSends.Store(1)
	e.create(e.task("second", "wait", shared))
	second := e.waitRunning("second").Status.TaskID
	e.g.Expect(second).NotTo(Equal(first))
	e.g.Expect(e.agent.Calls("SendMessage")).To(HaveLen(2), "one send each, none repeated")
}
