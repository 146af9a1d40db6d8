/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// The operator reads each card and chooses: 1.0 JSON-RPC where offered,
// else 1.0 HTTP+JSON, else 0.3 JSON-RPC. The dual agent serves a 0.3-shaped card to clients that
// name no A2A-Version; the 1.0 interfaces it carries still win.
func TestAgentBecomesReady(t *testing.T) {
	for _, tc := range []struct{ mode, version, path, binding string }{
		{modeV1, "1.0", "/a2a/jsonrpc", a2a.BindingJSONRPC},
		{modeV03, "0.3", "/a2a/v0.3/jsonrpc", a2a.BindingJSONRPC},
		{modeBoth, "1.0", "/a2a/jsonrpc", a2a.BindingJSONRPC},
		{modeREST, "1.0", "/a2a/rest", a2a.BindingHTTPJSON},
	} {
		t.Run("agent-"+tc.mode, func(t *testing.T) {
			e := setup(t, tc.mode)
			a := &v1alpha1.Agent{}
			e.g.Eventually(func(g Gomega) {
				g.Expect(kube.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: agentName}, a)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")).To(BeTrue(), "conditions: %+v", a.Status.Conditions)
			}, eventually, tick).Should(Succeed())
			e.g.Expect(a.Status.ProtocolVersion).To(Equal(tc.version))
			e.g.Expect(a.Status.Binding).To(Equal(tc.binding))
			e.g.Expect(a.Status.Endpoint).To(Equal(e.agent.URL() + tc.path))
			e.g.Expect(a.Status.CardName).To(Equal("js-echo"))
			e.g.Expect(a.Status.Skills).To(ContainElement(HaveField("ID", "echo")))
			e.g.Expect(a.Status.Streaming).To(BeTrue())
		})
	}
}

func TestTaskCompletesWithEcho(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("hello", "hello from tether"))
		d := e.waitPhase("hello", v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.RemoteState).To(Equal(string(a2a.StateCompleted)))
		e.g.Expect(d.Status.Result).NotTo(BeNil())
		e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello from tether"))
		media := "text/plain"
		if e.agent.mode == modeV03 {
			media = "" // 0.3 text parts carry no media type
		}
		e.g.Expect(d.Status.Result.Artifacts).To(ConsistOf(v1alpha1.Artifact{Name: "result", MediaType: media, Text: "echo: hello from tether"}))

		contextID := delegation.ContextID(&d.Spec, string(d.UID))
		e.g.Expect(d.Status.ContextID).To(Equal(contextID))
		sends := e.agent.Sends(contextID)
		e.g.Expect(sends).To(HaveLen(1))
		e.g.Expect(sends[0].MessageID).To(Equal(delegation.MessageID(string(d.UID), -1)))
		e.waitLogged("task " + d.Status.TaskID + " received (context " + contextID + ", message " + sends[0].MessageID + ", parts text)")
	})
}

// Every kind of part tether sends, with metadata and the budget extension's
// data, is accepted; the SDK parses each part as what it was sent as.
func TestPartsAndMetadataAreAccepted(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("parts", "hello", func(d *v1alpha1.Delegation) {
			d.Spec.Message.Parts = []v1alpha1.Part{
				{Text: " world", MediaType: "text/plain"},
				{Data: &runtime.RawExtension{Raw: []byte(`{"n":1,"list":["a"]}`)}, MediaType: "application/json"},
				{URL: "https://example.com/a.txt", MediaType: "text/plain", Filename: "a.txt"},
			}
			d.Spec.Message.Metadata = map[string]string{"team": "a"}
			d.Spec.Budget = &v1alpha1.BudgetSpec{Meters: v1alpha1.Meters{"tokens": 1000}}
		}))
		d := e.waitPhase("parts", v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello world"))
		e.waitLogged("task " + d.Status.TaskID + " received (context " + d.Status.ContextID + ", message " +
			delegation.MessageID(string(d.UID), -1) + ", parts text+text+data+url)")
	})
}

// An agent may answer a send with a message and create no task (the JS
// SDK's samples do): the Delegation succeeds with the message's text.
func TestMessageAnswerWithoutTask(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("chat", "message me"))
		d := e.waitPhase("chat", v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.TaskID).To(BeEmpty())
		e.g.Expect(d.Status.Result).NotTo(BeNil())
		e.g.Expect(d.Status.Result.Text).To(Equal("echo: message me"))
		e.waitLogged("message " + delegation.MessageID(string(d.UID), -1) + " answered without a task")
		e.g.Consistently(func() []agentCall { return e.agent.Sends(d.Status.ContextID) }, time.Second, tick).Should(HaveLen(1))
	})
}

func TestRemoteFailure(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("broken", "fail please"))
		d := e.waitPhase("broken", v1alpha1.PhaseFailed)
		e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRemoteFailed))
		e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureInternal))
		e.g.Expect(d.Status.Outcome.Message).To(Equal("it broke"))
	})
}

func TestCancelBySpec(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("long", "wait for it"))
		id := e.waitRunning("long").Status.TaskID

		e.update("long", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		d := e.waitPhase("long", v1alpha1.PhaseCanceled)
		e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRequested))
		e.g.Expect(d.Status.RemoteState).To(Equal(string(a2a.StateCanceled)))
		e.g.Expect(e.agent.Cancelled(id)).To(BeTrue())
		e.waitLogged("task " + id + " cancelled")
		e.g.Expect(e.readBack(id).State).To(Equal(a2a.StateCanceled))
	})
}

// Cancelling the root of a three-level tree reaches every JS task.
func TestCancelRootCancelsTheTree(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("root", "wait root"))
		e.create(e.task("child", "wait child", childOf("root")))
		e.create(e.task("grandchild", "wait grandchild", childOf("child")))
		tasks := map[string]string{}
		for _, n := range []string{"root", "child", "grandchild"} {
			tasks[n] = e.waitRunning(n).Status.TaskID
		}

		e.update("root", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		e.g.Expect(e.waitPhase("root", v1alpha1.PhaseCanceled).Status.Outcome.Reason).To(Equal(delegation.ReasonRequested))
		for _, n := range []string{"child", "grandchild"} {
			e.g.Expect(e.waitPhase(n, v1alpha1.PhaseCanceled).Status.Outcome.Reason).To(Equal(delegation.ReasonParentEnded))
		}
		for n, id := range tasks {
			e.g.Expect(e.agent.Cancelled(id)).To(BeTrue(), "no cancel reached the agent for %s", n)
			e.waitLogged("task " + id + " cancelled")
			e.g.Expect(e.readBack(id).State).To(Equal(a2a.StateCanceled), n)
		}
	})
}

func TestInputRequiredThenReply(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("ask", "input please"))
		d := e.waitPhase("ask", v1alpha1.PhaseInputRequired)
		id := d.Status.TaskID
		e.g.Expect(d.Status.RemoteState).To(Equal(string(a2a.StateInputRequired)))
		e.g.Expect(d.Status.Outcome.Message).To(Equal("which colour?"))

		e.update("ask", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "blue"}) })
		d = e.waitPhase("ask", v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.TaskID).To(Equal(id), "the reply continued the same task")
		e.g.Expect(d.Status.RepliesSent).To(Equal(int32(1)))
		e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
		e.waitLogged("task " + id + ` reply received: "blue"`)

		sends := e.agent.Sends(d.Status.ContextID)
		e.g.Expect(sends).To(HaveLen(2), "each message is sent exactly once")
		e.g.Expect(sends[1].TaskID).To(Equal(id))
		e.g.Expect(sends[1].MessageID).To(Equal(delegation.MessageID(string(d.UID), 0)))
		e.g.Expect(e.agent.Cancelled(id)).To(BeFalse())
	})
}

func TestDeletingSendsCancelFirst(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("doomed", "wait"))
		id := e.waitRunning("doomed").Status.TaskID

		e.g.Expect(kube.Delete(context.Background(), e.get("doomed"))).To(Succeed())
		e.g.Eventually(func() bool {
			err := kube.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "doomed"}, &v1alpha1.Delegation{})
			return apierrors.IsNotFound(err)
		}, eventually, tick).Should(BeTrue())
		// The finalizer let go only after the agent confirmed the cancel.
		e.g.Expect(e.agent.Cancelled(id)).To(BeTrue())
		e.g.Expect(e.readBack(id).State).To(Equal(a2a.StateCanceled))
		e.waitLogged("task " + id + " cancelled")
	})
}

// The JS agent declares neither tether extension: a leased task runs
// without a grant, and its renewals (GetTask with the lease extension
// activated, in the header of the task's protocol version) are accepted.
func TestLeaseWithoutTheExtension(t *testing.T) {
	forEachProtocol(t, func(e *env) {
		e.create(e.task("leased", "wait", func(d *v1alpha1.Delegation) {
			d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 3 * time.Second}}
		}))
		d := e.waitRunning("leased")
		e.g.Expect(d.Status.Lease).NotTo(BeNil())
		e.g.Expect(d.Status.Lease.Granted).To(BeFalse())
		e.g.Expect(d.Status.Lease.Reason).To(ContainSubstring("does not declare the lease extension"))

		header := "A2A-Extensions: "
		if e.agent.mode == modeV03 {
			header = "X-A2A-Extensions: "
		}
		id := d.Status.TaskID
		renewals := func() int {
			n := 0
			for _, c := range e.agent.Calls(getMethods) {
				if c.TaskID == id && c.Extensions == header+a2a.LeaseExtensionURI {
					n++
				}
			}
			return n
		}
		e.g.Eventually(renewals, eventually, tick).Should(BeNumerically(">=", 2))
		e.g.Expect(e.get("leased").Status.Phase).To(Equal(v1alpha1.PhaseRunning))

		e.update("leased", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		e.waitPhase("leased", v1alpha1.PhaseCanceled)
	})
}

// The JS SDK lists tasks by contextId over 1.0: when the answer to a send
// is lost, the operator finds the task with ListTasks and adopts it instead
// of sending again, whether the task is still running or already finished.
func TestLostSendIsAdoptedV1(t *testing.T) {
	for _, mode := range []string{modeV1, modeREST} {
		t.Run("protocol-"+mode, func(t *testing.T) { lostSendIsAdopted(setup(t, mode)) })
	}
}

func lostSendIsAdopted(e *env) {
	e.create(e.task("quick", "hello "+dropMarker))
	e.create(e.task("slow", "wait "+dropMarker))

	d := e.waitPhase("quick", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.agent.Calls(listMethods)).To(ContainElement(HaveField("ContextID", d.Status.ContextID)), "looked up")
	e.g.Expect(e.agent.Sends(d.Status.ContextID)).To(HaveLen(1), "adopted, not sent twice")
	e.g.Expect(d.Status.Result).NotTo(BeNil(), "the adopted task's result was read")
	e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello " + dropMarker))

	d = e.waitRunning("slow")
	e.g.Expect(e.agent.Calls(listMethods)).To(ContainElement(HaveField("ContextID", d.Status.ContextID)), "looked up")
	e.g.Expect(e.agent.Sends(d.Status.ContextID)).To(HaveLen(1), "adopted, not sent twice")
	e.g.Expect(strings.Count(e.agent.Log(), "(context "+d.Status.ContextID)).To(Equal(1), "the agent started one task")

	e.update("slow", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("slow", v1alpha1.PhaseCanceled)
	e.waitLogged("task " + d.Status.TaskID + " cancelled")
}

// 0.3 has no ListTasks: after a lost answer the task can be neither found
// nor safely sent again (the JS SDK does not deduplicate message ids, so a
// second send would start a second task). The Delegation fails with reason
// SendOutcomeUnknown and the agent holds exactly one task.
func TestLostSendAtAV03AgentIsNotSentAgain(t *testing.T) {
	e := setup(t, modeV03)
	e.create(e.task("quick", "hello "+dropMarker))

	d := e.waitPhase("quick", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonSendOutcomeUnknown))
	contextID := delegation.ContextID(&d.Spec, string(d.UID))
	e.g.Consistently(func() []agentCall { return e.agent.Sends(contextID) }, time.Second, tick).Should(HaveLen(1), "never sent twice")
	e.g.Expect(e.agent.Calls(listMethods)).To(BeEmpty(), "no list call is made to a 0.3 agent")
	e.g.Expect(strings.Count(e.agent.Log(), "(context "+contextID)).To(Equal(1), "the agent started one task")
}
