/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

// The TypeScript agentkit's sample (examples/agents/ts-worker) under the
// operator on a real API server: leases honoured and lapsed, budgets
// charged to the parent, and a child the agent delegates with delegate()
// cancelled with its parent.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/test/cluster"
)

const tsAgentName = "ts"

// setupTS makes a namespace with an Agent "ts" for the TypeScript sample
// that serves JSON-RPC.
func setupTS(t *testing.T) *env { return setupTSAgent(t, tsWorker) }

// setupTSAgent makes a namespace with an Agent "ts" for a TypeScript
// sample; the REST-only one's Agent requires its card signed by tsCardKey
// (the key set in a ConfigMap).
func setupTSAgent(t *testing.T, worker *jsAgent, mutate ...func(*v1alpha1.Agent)) *env {
	t.Helper()
	requireAgents(t)
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), agent: worker}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "interop-ts-"}}
	e.g.Expect(kube.Create(context.Background(), ns)).To(Succeed())
	e.ns = ns.Name
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", worker.process.Name(), cluster.Tail(e.agent.Log(), 40))
		}
	})
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: tsAgentName}, Spec: v1alpha1.AgentSpec{
		URL:            e.agent.URL(),
		PollInterval:   &metav1.Duration{Duration: 200 * time.Millisecond},
		RequestTimeout: &metav1.Duration{Duration: 5 * time.Second},
	}}
	if worker == tsRESTWorker {
		requireCardSignature(e.cardKeys(keysInConfigMap))(a)
	}
	for _, m := range mutate {
		m(a)
	}
	e.g.Expect(kube.Create(context.Background(), a)).To(Succeed())
	return e
}

// forEachTSBinding runs test against the TypeScript sample serving
// JSON-RPC and the one serving only HTTP+JSON, its card signed, in parallel.
func forEachTSBinding(t *testing.T, test func(e *env)) {
	t.Helper()
	for name, worker := range map[string]**jsAgent{"jsonrpc": &tsWorker, "rest-signed": &tsRESTWorker} {
		t.Run(name, func(t *testing.T) { test(setupTSAgent(t, *worker)) })
	}
}

// tsTask builds a Delegation to the TypeScript sample.
func (e *env) tsTask(name, text string, mutate ...func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
	d := e.task(name, text, mutate...)
	d.Spec.AgentRef = &v1alpha1.AgentRef{Name: tsAgentName}
	return d
}

func leased(ttl time.Duration) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}} }
}

// renewals counts the GetTask calls of a task that activated the lease extension.
func renewals(a *jsAgent, taskID string) int {
	n := 0
	for _, c := range a.Calls(getMethods) {
		if c.TaskID == taskID && strings.Contains(c.Extensions, a2a.LeaseExtensionURI) {
			n++
		}
	}
	return n
}

// A leased task lives as long as the operator renews it: the kit grants the
// lease, the operator renews every ttl/3 and the agent cancels nothing.
func TestTSAgentHonoursARenewedLease(t *testing.T) {
	forEachTSBinding(t, func(e *env) {
		// Long enough that a loaded machine renews in time (every ttl/3).
		const ttl = 4 * time.Second
		e.create(e.tsTask("leased", "wait", leased(ttl)))
		d := e.waitRunning("leased")
		task := d.Status.TaskID

		e.g.Eventually(func() bool { return e.get("leased").Status.Lease != nil && e.get("leased").Status.Lease.Granted },
			eventually, tick).Should(BeTrue(), "the agent's grant was not recorded: %+v", e.get("leased").Status.Lease)
		// Two ttls without a lapse, renewed all along.
		e.g.Consistently(func() v1alpha1.Phase { return e.get("leased").Status.Phase }, 2*ttl, 200*time.Millisecond).
			Should(Equal(v1alpha1.PhaseRunning))
		e.g.Expect(e.agent.Logged("task " + task + " lease lapsed")).To(BeFalse())
		e.g.Expect(renewals(e.agent, task)).To(BeNumerically(">=", 3), "renewals seen: %d", renewals(e.agent, task))
		e.g.Expect(e.agent.Cancelled(task)).To(BeFalse())

		e.update("leased", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		e.waitPhase("leased", v1alpha1.PhaseCanceled)
		e.waitLogged("task " + task + " cancelled")
		e.g.Expect(e.agent.Cancelled(task)).To(BeTrue(), "CancelTask did not reach the agent")
	})
}

// Once nothing renews a lease (the Delegation is detached: the operator
// stops following it and sends no cancel), the agent itself cancels the
// task, within about one ttl.
func TestTSAgentCancelsATaskWhoseLeaseLapsed(t *testing.T) {
	forEachTSBinding(t, func(e *env) {
		const ttl = 2 * time.Second
		e.create(e.tsTask("lapsing", "wait", leased(ttl)))
		task := e.waitRunning("lapsing").Status.TaskID

		e.update("lapsing", func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
		e.waitPhase("lapsing", v1alpha1.PhaseDetached)
		detached := time.Now()
		e.waitLogged("task " + task + " lease lapsed")
		e.waitLogged("task " + task + " cancelled")
		lapsedAfter := time.Since(detached)
		e.g.Expect(e.agent.Cancelled(task)).To(BeFalse(), "the operator cancelled a detached task; the lease was to stop it")

		got := e.readBack(task)
		e.g.Expect(got.State).To(Equal(a2a.StateCanceled))
		e.g.Expect(got.StatusText).To(MatchRegexp(`^lease expired at \S+ without renewal$`))
		e.t.Logf("the agent cancelled the task %s after the detach (ttl %s)", lapsedAfter.Round(100*time.Millisecond), ttl)
	})
}

// The agent's reported spend is what the parent is charged: a group holds
// the budget, the child to the TypeScript agent spends part of its grant.
func TestTSAgentSpendIsChargedToTheParent(t *testing.T) {
	forEachTSBinding(t, func(e *env) {
		e.create(&v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "group"},
			Spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 1000}}}})
		e.create(e.tsTask("spender", "spend 120", childOf("group"), func(d *v1alpha1.Delegation) {
			d.Spec.Budget = &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 300}}
		}))
		child := e.waitPhase("spender", v1alpha1.PhaseSucceeded)
		e.g.Expect(child.Status.Result).NotTo(BeNil())
		e.g.Expect(child.Status.Result.Text).To(ContainSubstring("spent 120 tokens"))
		e.g.Expect(child.Status.Budget).NotTo(BeNil())
		e.g.Expect(child.Status.Budget.Reported).To(Equal(v1alpha1.Meters{"tokens": 120}), "the agent's report: %+v", child.Status.Budget)
		e.g.Expect(child.Status.Budget.Left).To(Equal(v1alpha1.Meters{"tokens": 180}))

		e.g.Eventually(func(g Gomega) {
			b := e.get("group").Status.Budget
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.Spent).To(Equal(v1alpha1.Meters{"tokens": 120}), "the reported spend, not the 300 reserved")
			g.Expect(b.Left).To(Equal(v1alpha1.Meters{"tokens": 880}))
			g.Expect(b.Reservations).To(BeEmpty())
		}, eventually, tick).Should(Succeed())
	})
}

// A task that asks for input gets the Delegation's reply in the same task.
func TestTSAgentInputRequiredThenReply(t *testing.T) {
	forEachTSBinding(t, func(e *env) {
		e.create(e.tsTask("ask", "input"))
		d := e.waitPhase("ask", v1alpha1.PhaseInputRequired)
		id := d.Status.TaskID
		e.g.Expect(d.Status.Outcome.Message).To(Equal("which colour?"))

		e.update("ask", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "blue"}) })
		d = e.waitPhase("ask", v1alpha1.PhaseSucceeded)
		e.g.Expect(d.Status.TaskID).To(Equal(id), "the reply continued the same task")
		e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
		e.waitLogged("task " + id + ` reply received: "blue"`)
		e.g.Expect(e.agent.Sends(d.Status.ContextID)).To(HaveLen(2), "each message is sent exactly once")
	})
}

// The agent delegates with delegate(): the child Delegation is created
// under the task's own Delegation (its claim proven: sent to this agent,
// still running), is sent, and is cancelled when its parent is: the
// child's agent receives CancelTask.
func TestTSAgentDelegatesAChildThatIsCancelledWithItsParent(t *testing.T) {
	e := setupTS(t)
	e.create(e.tsTask("orch", "delegate "+tsAgentName+" wait"))
	e.waitRunning("orch")

	var child v1alpha1.Delegation
	e.g.Eventually(func(g Gomega) {
		list := &v1alpha1.DelegationList{}
		g.Expect(kube.List(context.Background(), list, client.InNamespace(e.ns))).To(Succeed())
		i := slices.IndexFunc(list.Items, func(d v1alpha1.Delegation) bool {
			return d.Spec.ParentRef != nil && d.Spec.ParentRef.Name == "orch"
		})
		g.Expect(i).NotTo(Equal(-1), "no child of orch yet")
		child = list.Items[i]
	}, eventually, tick).Should(Succeed())
	orch := e.get("orch")
	e.g.Expect(child.Name).To(MatchRegexp(`^orch-child-[0-9a-f]{10}$`))
	e.g.Expect(child.Annotations).To(HaveKeyWithValue("delegation.tether.dev/agentkit-child", string(orch.UID)+"/child"))
	e.g.Expect(child.Spec.AgentRef).To(Equal(&v1alpha1.AgentRef{Name: tsAgentName}))
	// The operator sets the ownerReference after the agent created the child.
	e.g.Eventually(func() []metav1.OwnerReference { return e.get(child.Name).OwnerReferences }, eventually, tick).
		Should(ContainElement(HaveField("UID", orch.UID)), "the operator owns the child by its parent")

	childTask := e.waitRunning(child.Name).Status.TaskID
	e.waitLogged("task " + childTask + " received for Delegation " + e.ns + "/" + child.Name)

	e.update("orch", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("orch", v1alpha1.PhaseCanceled)
	c := e.waitPhase(child.Name, v1alpha1.PhaseCanceled)
	e.g.Expect(c.Status.Outcome).NotTo(BeNil())
	e.g.Eventually(func() bool { return e.agent.Cancelled(childTask) }, eventually, tick).Should(BeTrue(), "CancelTask of the child did not reach the agent")
	e.waitLogged("task " + childTask + " cancelled")
}

// A task that was not sent for the Delegation it names gets no child: the
// kit's claim check refuses it and the task fails with the refusal.
func TestTSAgentRefusesAClaimItCannotProve(t *testing.T) {
	e := setupTS(t)
	e.create(e.tsTask("victim", "wait"))
	e.waitRunning("victim")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := a2a.Dial(ctx, a2a.Endpoint{URL: e.agent.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	sent, err := c.Send(ctx, a2a.SendRequest{Text: "delegate " + tsAgentName + " wait",
		Metadata: map[string]any{a2a.DelegationMetadataKey: e.ns + "/victim"}})
	e.g.Expect(err).NotTo(HaveOccurred())
	var got *a2a.Task
	e.g.Eventually(func(g Gomega) {
		got, err = c.Get(ctx, sent.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.State).To(Equal(a2a.StateFailed))
	}, eventually, tick).Should(Succeed())
	e.g.Expect(got.StatusText).To(ContainSubstring("is not the named Delegation's"))
	e.waitWarning("victim", "ClaimNotProven")

	list := &v1alpha1.DelegationList{}
	e.g.Expect(kube.List(context.Background(), list, client.InNamespace(e.ns))).To(Succeed())
	e.g.Expect(list.Items).To(HaveLen(1), "a child was created for an unproven claim")
}

// A child's name already held by a Delegation the kit did not create (no
// ownership mark) is not taken over: delegate() fails and the squatter is
// left as it was.
func TestTSAgentDoesNotAcceptASquattedChildName(t *testing.T) {
	e := setupTS(t)
	sum := sha256.Sum256([]byte("orch/child"))
	name := "orch-child-" + hex.EncodeToString(sum[:])[:10] // the kits' child name for parent orch, key child
	e.create(e.tsTask(name, "wait"))
	e.waitRunning(name)

	e.create(e.tsTask("orch", "delegate "+tsAgentName+" wait"))
	d := e.waitPhase("orch", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome).NotTo(BeNil())
	e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("the child's name is taken"))
	e.waitWarning("orch", "ChildNameTaken")
	squatter := e.get(name)
	e.g.Expect(squatter.Spec.ParentRef).To(BeNil())
	e.g.Expect(squatter.Status.Phase).To(Equal(v1alpha1.PhaseRunning))
}

// waitWarning waits for a Warning Event with reason on the Delegation name,
// as the TypeScript agentkit records it.
func (e *env) waitWarning(name, reason string) {
	e.t.Helper()
	e.g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(kube.List(context.Background(), list, client.InNamespace(e.ns))).To(Succeed())
		g.Expect(list.Items).To(ContainElement(And(
			HaveField("Reason", reason), HaveField("Type", corev1.EventTypeWarning),
			HaveField("Regarding.Kind", "Delegation"), HaveField("Regarding.Name", name),
			HaveField("ReportingController", "tether.dev/agentkit"))))
	}, eventually, tick).Should(Succeed(), "no %s Warning Event on %s", reason, name)
}
