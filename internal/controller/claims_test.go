/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/pkg/agentkit"
	"github.com/tether-dev/tether/test/objects"
)

// forwarded is what a forwarding agent learnt from the agent it forwarded a
// claim to.
type forwarded struct {
	state tethera2a.State
	text  string
	err   error
}

// forwarder is a hostile agent: before it answers the operator's send, it
// forwards the message id and the claim it received to another agent, as
// the start of a task there, and waits for that task to end.
type forwarder struct {
	to   string
	text string
	got  chan forwarded
}

func (f forwarder) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		f.got <- f.forward(ctx, ec.Message)
		yield(a2a.NewSubmittedTask(ec, ec.Message), nil)
	}
}

func (f forwarder) forward(ctx context.Context, msg *a2a.Message) forwarded {
	c, err := tethera2a.Dial(ctx, tethera2a.Endpoint{URL: f.to})
	if err != nil {
		return forwarded{err: err}
	}
	defer c.Close()
	task, err := c.Send(ctx, tethera2a.SendRequest{MessageID: msg.ID, Text: f.text,
		Metadata: map[string]any{tethera2a.DelegationMetadataKey: msg.Metadata[tethera2a.DelegationMetadataKey]}})
	if err != nil {
		return forwarded{err: err}
	}
	for !task.State.Terminal() {
		select {
		case <-ctx.Done():
			return forwarded{err: ctx.Err()}
		case <-time.After(50 * time.Millisecond):
		}
		if task, err = c.Get(ctx, task.ID, false); err != nil {
			return forwarded{err: err}
		}
	}
	return forwarded{state: task.State, text: task.StatusText}
}

func (forwarder) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// An agent a Delegation was sent to forwards its claim, with the very
// message id the operator derived from the Delegation's UID, to another
// agentkit agent while the Delegation runs (its task id not yet recorded).
// That agent proves the claim against the Delegation's Agent, which points
// elsewhere, and creates nothing.
func TestAForwardedClaimCreatesNothing(t *testing.T) {
	e := setup(t)
	_, orch := orchestrate(t, e)
	got := make(chan forwarded, 1)
	evil := newKitAgent(t, forwarder{to: orch.URL(), text: "summarise fanout=2", got: got})
	e.createAgent("evil", evil.URL(), func(a *v1alpha1.Agent) { a.Spec.RequestTimeout = &metav1.Duration{Duration: time.Minute} })

	e.create(e.kitTask("x", "evil", "anything", withBudget(v1alpha1.Meters{tokens: 1000})))
	var f forwarded
	e.g.Eventually(got, eventually).Should(Receive(&f))
	e.g.Expect(f.err).NotTo(HaveOccurred())
	e.g.Expect(f.state).To(Equal(tethera2a.StateFailed))
	e.g.Expect(f.text).To(And(ContainSubstring("not the named Delegation's"), ContainSubstring("was sent to another agent")))
	e.g.Expect(evil.Sends(e.ns, "x")).To(HaveLen(1), "the claim forwarded was the operator's own")
	e.g.Expect(e.children(e.g, "x")).To(BeEmpty(), "nothing was created under x")

	// The same agent delegates for a Delegation sent to it.
	e.create(e.kitTask("legit", "orchestrator", "summarise fanout=1", withBudget(v1alpha1.Meters{tokens: 1000})))
	e.waitPhase("legit", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.children(e.g, "legit")).To(HaveLen(1))
}

// eventRecorder records Events on the test API server, as an agent's own
// recorder would.
func eventRecorder(t *testing.T) events.EventRecorder {
	t.Helper()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: kubernetes.NewForConfigOrDie(cfg).EventsV1()})
	stop := make(chan struct{})
	b.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); b.Shutdown() })
	return b.NewRecorder(scheme, "agentkit-test")
}

// A claim replayed to the agent its Delegation was sent to, with the right
// message id, after the Delegation settled, creates nothing; the agent
// records why on the Delegation, which was its to report on.
func TestAClaimAfterItsDelegationSettledCreatesNothing(t *testing.T) {
	e := setup(t)
	workers := newKitWorker(t)
	orch := newKitAgent(t, sample.Orchestrator{Kube: k8sClient, WorkerAgent: "worker", Fanout: 1, Meter: tokens},
		agentkit.WithEventRecorder(eventRecorder(t)))
	e.createAgent("worker", workers.URL())
	e.createAgent("orchestrator", orch.URL())
	ctx := context.Background()

	e.create(e.kitTask("done", "orchestrator", "summarise fanout=1", withBudget(v1alpha1.Meters{tokens: 1000})))
	d := e.waitPhase("done", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.children(e.g, "done")).To(HaveLen(1))

	c, err := tethera2a.Dial(ctx, tethera2a.Endpoint{URL: orch.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	task, err := c.Send(ctx, tethera2a.SendRequest{MessageID: delegation.MessageID(string(d.UID), -1), Text: "summarise fanout=3",
		Metadata: map[string]any{tethera2a.DelegationMetadataKey: e.ns + "/done"}})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Eventually(func(g Gomega) tethera2a.State {
		got, err := c.Get(ctx, task.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		task = got
		return got.State
	}, eventually, tick).Should(Equal(tethera2a.StateFailed))
	e.g.Expect(task.StatusText).To(ContainSubstring("no longer runs (Succeeded)"))
	e.g.Expect(e.children(e.g, "done")).To(HaveLen(1), "nothing more was created")

	e.g.Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(e.ns))).To(Succeed())
		var notes []string
		for _, ev := range list.Items {
			if ev.Reason == agentkit.EventClaimNotProven && ev.Regarding.UID == d.UID && ev.Type == "Warning" {
				notes = append(notes, ev.Note)
			}
		}
		return notes
	}, eventually, tick).Should(ContainElement(ContainSubstring("no longer runs")))
}

// A tenant who learnt another namespace's task id at a shared agent cannot
// adopt it: the Delegation fails with AdoptionRefused, records no task id,
// and nothing reaches the task (no cancel when the thief is deleted).
func TestAdoptingAnotherNamespacesTaskIsRefused(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	victim := newNamespace(t)
	startOperator(t, victim, testOptions())
	e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "agent"},
		Spec: v1alpha1.AgentSpec{URL: e.agent.URL(), PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond}}})).To(Succeed())
	theirs := objects.Namespace{Client: k8sClient, Name: victim, Timeout: eventually, Poll: tick}
	for name, ctxID := range map[string]string{"derived": "", "chosen": "team-chat"} {
		d := e.task(name, "wait", func(d *v1alpha1.Delegation) { d.Namespace = victim; d.Spec.Message.ContextID = ctxID })
		e.g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	}

	for name, what := range map[string]string{"derived": "the context id names it", "chosen": "its first message id names it"} {
		id := theirs.WaitPhase(e.g, name, v1alpha1.PhaseRunning).Status.TaskID
		e.g.Expect(id).NotTo(BeEmpty())
		thief := "thief-" + name
		e.create(e.task(thief, "", func(d *v1alpha1.Delegation) { d.Spec.Message = nil; d.Spec.TaskID = id }))
		d := e.waitPhase(thief, v1alpha1.PhaseFailed)
		e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAdoptionRefused), what)
		e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailurePolicyRefusal))
		e.g.Expect(d.Status.TaskID).To(BeEmpty(), "the task id is never recorded")
		e.g.Expect(d.Status.Result).To(BeNil(), "nor its result")

		e.g.Expect(k8sClient.Delete(ctx, d)).To(Succeed())
		e.g.Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey(d), &v1alpha1.Delegation{}))
		}, eventually, tick).Should(BeTrue())
		e.g.Expect(e.agent.Cancelled(id)).To(BeFalse(), "deleting the thief cancels nothing")
		e.g.Expect(theirs.Get(e.g, name).Status.Phase).To(Equal(v1alpha1.PhaseRunning))
	}
}

// Someone who may create Delegations in the namespace takes the name of a
// child agentkit will create, with another message. agentkit does not take
// it for its own child: the orchestrator fails instead of reporting the
// squatter's result as its worker's.
func TestASquattedChildNameIsNotAccepted(t *testing.T) {
	e := setup(t)
	orchestrate(t, e)
	squat := e.kitTask(agentkit.ChildName("root", "part-1"), "worker", "something else entirely", childOf("root"))
	e.create(squat)

	e.create(e.kitTask("root", "orchestrator", "summarise fanout=1", withBudget(v1alpha1.Meters{tokens: 1000})))
	root := e.waitPhase("root", v1alpha1.PhaseFailed)
	e.g.Expect(root.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailurePolicyRefusal))
	e.g.Expect(root.Status.Outcome.Message).To(ContainSubstring("the child's name is taken"))
	kids := e.children(e.g, "root")
	e.g.Expect(kids).To(HaveLen(1), "only the squatter's object")
	e.g.Expect(kids[0].Spec.Message.Text).To(Equal("something else entirely"))
	e.g.Expect(kids[0].Annotations).NotTo(HaveKey(agentkit.AnnotationChild))
}

// twoKeys delegates to the worker under keys that read alike and waits for
// both children.
type twoKeys struct{ keys []string }

func (x twoKeys) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		for _, k := range x.keys {
			key, err := agentkit.DelegateAsync(ctx, k8sClient, agentkit.DelegateRequest{Key: k, Agent: "worker", Text: "part " + k})
			if err == nil {
				_, err = agentkit.Wait(ctx, k8sClient, key)
			}
			if err != nil {
				yield(agentkit.FailEvent(ec, v1alpha1.FailureInternal, err.Error()), nil)
				return
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (twoKeys) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// Keys that map to the same name-safe text get distinct children, each
// with the spec asked for.
func TestCollidingKeysGetDistinctChildren(t *testing.T) {
	e := setup(t)
	workers := newKitWorker(t)
	e.createAgent("worker", workers.URL())
	agent := newKitAgent(t, twoKeys{keys: []string{"a_b", "a-b", "A.B"}})
	e.createAgent("delegator", agent.URL())

	e.create(e.kitTask("p", "delegator", "go"))
	p := e.waitPhase("p", v1alpha1.PhaseSucceeded)
	kids := e.children(e.g, "p")
	e.g.Expect(kids).To(HaveLen(3))
	texts := map[string]string{}
	for _, k := range kids {
		e.g.Expect(k.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), k.Name)
		texts[k.Annotations[agentkit.AnnotationChild]] = k.Spec.Message.Text
	}
	uid := string(p.UID)
	e.g.Expect(texts).To(Equal(map[string]string{uid + "/a_b": "part a_b", uid + "/a-b": "part a-b", uid + "/A.B": "part A.B"}))
}

// Every reply carries the claim of the Delegation sending it, so agents
// never need the task's history to know who speaks.
func TestRepliesCarryTheClaim(t *testing.T) {
	e := setup(t)
	workers := newKitWorker(t)
	e.createAgent("worker", workers.URL())
	e.create(e.kitTask("asker", "worker", "ask"))
	e.waitPhase("asker", v1alpha1.PhaseInputRequired)
	e.update("asker", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "go on"}) })
	e.waitPhase("asker", v1alpha1.PhaseSucceeded)

	sends := workers.Sends(e.ns, "")
	e.g.Expect(sends).To(HaveLen(2), "the first message and the reply")
	for _, s := range sends {
		e.g.Expect(s.Delegation).To(Equal(e.ns+"/asker"), "task %q", s.TaskID)
	}
	e.g.Expect(sends[1].TaskID).NotTo(BeEmpty(), "the second is the reply to the task")
}
