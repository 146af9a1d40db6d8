/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/test/objects"
)

// sharedEnv is a platform namespace holding Agent "shared" (its
// credentials in a Secret there) and two team namespaces, all watched by
// one operator.
type sharedEnv struct {
	t                    *testing.T
	g                    *WithT
	agents, teamA, teamB string
	agent                *testAgent
}

func setupShared(t *testing.T) *sharedEnv {
	t.Helper()
	t.Parallel()
	e := &sharedEnv{t: t, g: NewWithT(t), agents: newNamespace(t), teamA: newNamespace(t), teamB: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	startOperatorIn(t, cfg, []string{e.agents, e.teamA, e.teamB}, testOptions(), nil)
	ctx := context.Background()
	// A team's Secret of the same name must never be what is sent.
	for ns, token := range map[string]string{e.agents: "Bearer platform-token", e.teamA: "Bearer team-token"} {
		e.g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds",
			Labels: map[string]string{AgentCredentialsLabel: "true"}}, StringData: map[string]string{"token": token}})).To(Succeed())
	}
	e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.agents, Name: "shared"},
		Spec: v1alpha1.AgentSpec{URL: e.agent.URL(), PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond},
			RequestTimeout: &metav1.Duration{Duration: 2 * time.Second},
			Headers:        []v1alpha1.AgentHeader{{Name: "Authorization", ValueFrom: v1alpha1.SecretKeyRef{Name: "creds", Key: "token"}}},
		}})).To(Succeed())
	return e
}

// grant creates an AgentGrant in the platform namespace.
func (e *sharedEnv) grant(name string, agents []string, from ...string) {
	e.t.Helper()
	g := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: e.agents, Name: name}, Spec: v1alpha1.AgentGrantSpec{Agents: agents}}
	for _, ns := range from {
		g.Spec.From = append(g.Spec.From, v1alpha1.GrantFrom{Namespace: ns})
	}
	e.g.Expect(k8sClient.Create(context.Background(), g)).To(Succeed())
}

func (e *sharedEnv) revoke(name string) {
	e.t.Helper()
	g := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: e.agents, Name: name}}
	e.g.Expect(k8sClient.Delete(context.Background(), g)).To(Succeed())
}

// send creates a Delegation in ns to the shared Agent.
func (e *sharedEnv) send(ns, name, text string) {
	e.t.Helper()
	e.g.Expect(k8sClient.Create(context.Background(), &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "shared", Namespace: e.agents},
			Message: &v1alpha1.Message{Text: text}}})).To(Succeed())
}

func (e *sharedEnv) in(ns string) objects.Namespace {
	return objects.Namespace{Client: k8sClient, Name: ns, Timeout: eventually, Poll: tick}
}

// sendsOf counts the first messages the agent received with this text.
func (e *sharedEnv) sendsOf(text string) int {
	n := 0
	for _, c := range e.agent.Calls("SendMessage") {
		if c.Text == text {
			n++
		}
	}
	return n
}

// waitNotGranted waits until the Delegation is Pending, reason
// AgentNotGranted, then checks for a while that nothing of it was sent.
func (e *sharedEnv) waitNotGranted(ns, name, text string) {
	e.t.Helper()
	e.g.Eventually(func(g Gomega) {
		d := e.in(ns).Get(g, name)
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAgentNotGranted))
	}, eventually, tick).Should(Succeed())
	e.g.Consistently(func() int { return e.sendsOf(text) }, 2*time.Second, tick).Should(BeZero(), "sent without a grant")
	d := e.in(ns).Get(e.g, name)
	e.g.Expect(d.Status.Outcome.Message).NotTo(ContainSubstring("not found"), "the message reveals nothing of the Agent")
	e.g.Expect(d.Finalizers).To(BeEmpty(), "nothing was sent, so nothing holds the object")
}

// A Delegation naming another namespace's Agent waits, and sends nothing,
// until a grant there admits its namespace; then it runs with the
// credentials of the Agent's namespace.
func TestSharedAgentSendsOnlyUnderAGrant(t *testing.T) {
	e := setupShared(t)
	e.send(e.teamA, "ask", "hello platform")
	e.waitNotGranted(e.teamA, "ask", "hello platform")

	e.grant("team-a", nil, e.teamA)
	d := e.in(e.teamA).WaitPhase(e.g, "ask", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result).NotTo(BeNil())
	e.g.Expect(d.Status.Result.Text).To(ContainSubstring("echo: hello platform"))
	e.g.Expect(e.sendsOf("hello platform")).To(Equal(1))
	for _, c := range e.agent.Calls("SendMessage") {
		e.g.Expect(c.Auth).To(Equal("Bearer platform-token"), "the credentials are the Agent's namespace's")
	}
}

// A grant admits the namespaces and Agents it names, no others.
func TestAGrantAdmitsOnlyWhatItNames(t *testing.T) {
	e := setupShared(t)
	e.grant("team-a", []string{"shared"}, e.teamA)
	e.grant("team-b-other", []string{"other"}, e.teamB)
	e.send(e.teamB, "ask-b", "from team b")
	e.waitNotGranted(e.teamB, "ask-b", "from team b")

	e.send(e.teamA, "ask-a", "from team a")
	e.in(e.teamA).WaitPhase(e.g, "ask-a", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.in(e.teamB).Get(e.g, "ask-b").Status.Outcome.Reason).To(Equal(delegation.ReasonAgentNotGranted))
	e.g.Expect(e.sendsOf("from team b")).To(BeZero())
}

// Revoking a grant stops new sends at once; a task already running goes on
// (it is read, and can still be cancelled).
func TestRevokingAGrantStopsNewSendsAndRunningTasksGoOn(t *testing.T) {
	e := setupShared(t)
	e.grant("team-a", nil, e.teamA)
	e.send(e.teamA, "long", "wait for me")
	running := e.in(e.teamA).WaitPhase(e.g, "long", v1alpha1.PhaseRunning)
	e.g.Expect(running.Status.TaskID).NotTo(BeEmpty())

	e.revoke("team-a")
	e.send(e.teamA, "after", "after the revoke")
	e.waitNotGranted(e.teamA, "after", "after the revoke")

	reads := len(e.agent.Calls("GetTask"))
	e.g.Eventually(func() int { return len(e.agent.Calls("GetTask")) }, eventually, tick).Should(BeNumerically(">", reads),
		"the running task is still followed")
	e.g.Expect(e.in(e.teamA).Get(e.g, "long").Status.Phase).To(Equal(v1alpha1.PhaseRunning))
	e.in(e.teamA).Update(e.g, "long", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.in(e.teamA).WaitPhase(e.g, "long", v1alpha1.PhaseCanceled)
	e.g.Eventually(func() bool { return e.agent.Cancelled(running.Status.TaskID) }, eventually, tick).Should(BeTrue())

	// A grant given again admits the waiting Delegation.
	e.grant("team-a-again", nil, e.teamA)
	e.in(e.teamA).WaitPhase(e.g, "after", v1alpha1.PhaseSucceeded)
}

// Bad references and grants are refused at admission.
func TestAdmissionRefusesBadSharedRefsAndGrants(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	bad := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "shared", Namespace: "Not_A_Namespace"}, Message: &v1alpha1.Message{Text: "hi"}}}
	err := k8sClient.Create(ctx, bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.agentRef.namespace"))

	ok := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "shared", Namespace: "platform"}, Message: &v1alpha1.Message{Text: "hi"}}}
	g.Expect(k8sClient.Create(ctx, ok)).To(Succeed())
	ok.Spec.AgentRef.Namespace = "elsewhere"
	err = k8sClient.Update(ctx, ok)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("agentRef is immutable"))

	noFrom := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty"}}
	err = k8sClient.Create(ctx, noFrom)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.from"))
	twice := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twice"}, Spec: v1alpha1.AgentGrantSpec{
		From: []v1alpha1.GrantFrom{{Namespace: "team-a"}, {Namespace: "team-a"}}}}
	err = k8sClient.Create(ctx, twice)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("Duplicate value"))
}

// A send waiting for room in the Agent's pool when its grant is revoked
// never leaves: it waits for a grant again, and is made once one comes.
// The send that had already left goes on.
func TestARevokedGrantStopsASendWaitingForRoom(t *testing.T) {
	e := setupShared(t)
	ctx := context.Background()
	e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.agents, Name: "narrow"},
		Spec: v1alpha1.AgentSpec{URL: e.agent.URL(), PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond},
			RequestTimeout: &metav1.Duration{Duration: 30 * time.Second}, MaxConcurrentCalls: ptr.To[int32](1)}})).To(Succeed())
	e.grant("team-a", []string{"narrow"}, e.teamA)
	to := func(name, text string) {
		e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.teamA, Name: name},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "narrow", Namespace: e.agents},
				Message: &v1alpha1.Message{Text: text}}})).To(Succeed())
	}
	held := make(chan struct{})
	e.agent.holdSends.Store(&held)
	released := false
	release := func() {
		if !released {
			released = true
			close(held)
		}
	}
	t.Cleanup(release)

	to("first", "holds the only place")
	e.g.Eventually(func() int { return e.sendsOf("holds the only place") }, eventually, tick).Should(Equal(1))
	to("queued", "queued for room")
	e.g.Eventually(func() string { return e.in(e.teamA).Get(e.g, "queued").Annotations[v1alpha1.AnnotationSendStarted] },
		eventually, tick).ShouldNot(BeEmpty(), "the send was recorded and handed to the pool")

	e.revoke("team-a")
	to("probe", "after the revoke")
	e.waitNotGranted(e.teamA, "probe", "after the revoke") // the operator's cache has seen the revoke
	release()

	e.in(e.teamA).WaitPhase(e.g, "first", v1alpha1.PhaseSucceeded)
	e.g.Eventually(func(g Gomega) {
		d := e.in(e.teamA).Get(g, "queued")
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAgentNotGranted))
	}, eventually, tick).Should(Succeed())
	e.g.Consistently(func() int { return e.sendsOf("queued for room") }, time.Second, tick).Should(BeZero())

	e.grant("team-a-again", nil, e.teamA)
	e.in(e.teamA).WaitPhase(e.g, "queued", v1alpha1.PhaseSucceeded)
	e.in(e.teamA).WaitPhase(e.g, "probe", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.sendsOf("queued for room")).To(Equal(1), "sent once, under the new grant")
}

// A shared Agent's spec.maxConcurrentTasks counts the tasks of every
// namespace using it, and a task that settles in one namespace lets a
// waiting one of another start.
func TestASharedAgentsTaskCapSpansNamespaces(t *testing.T) {
	e := setupShared(t)
	ctx := context.Background()
	e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.agents, Name: "single"},
		Spec: v1alpha1.AgentSpec{URL: e.agent.URL(), PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond},
			RequestTimeout: &metav1.Duration{Duration: 2 * time.Second}, MaxConcurrentTasks: ptr.To[int32](1)}})).To(Succeed())
	e.grant("teams", []string{"single"}, e.teamA, e.teamB)
	to := func(ns, name, text string) {
		e.g.Expect(k8sClient.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "single", Namespace: e.agents},
				Message: &v1alpha1.Message{Text: text}}})).To(Succeed())
	}
	to(e.teamA, "long", "wait in team a")
	e.in(e.teamA).WaitPhase(e.g, "long", v1alpha1.PhaseRunning)
	to(e.teamB, "next", "team b's turn")
	e.g.Eventually(func(g Gomega) {
		d := e.in(e.teamB).Get(g, "next")
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAgentAtCapacity))
	}, eventually, tick).Should(Succeed())
	e.g.Expect(e.sendsOf("team b's turn")).To(BeZero())

	e.in(e.teamA).Update(e.g, "long", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.in(e.teamB).WaitPhase(e.g, "next", v1alpha1.PhaseSucceeded)
}

// An Agent in a namespace the operator does not watch is never granted:
// the Delegation waits, and nothing is sent.
func TestASharedAgentOfAnUnwatchedNamespaceIsNotGranted(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	agents, team := newNamespace(t), newNamespace(t)
	agent := newTestAgent()
	t.Cleanup(agent.Close)
	startOperatorIn(t, cfg, []string{team}, testOptions(), nil)
	g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: agents, Name: "shared"},
		Spec: v1alpha1.AgentSpec{URL: agent.URL()}})).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: agents, Name: "team"},
		Spec: v1alpha1.AgentGrantSpec{From: []v1alpha1.GrantFrom{{Namespace: team}}}})).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "ask"},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "shared", Namespace: agents},
			Message: &v1alpha1.Message{Text: "anyone there"}}})).To(Succeed())
	in := objects.Namespace{Client: k8sClient, Name: team, Timeout: eventually, Poll: tick}
	g.Eventually(func(g Gomega) {
		d := in.Get(g, "ask")
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAgentNotGranted))
	}, eventually, tick).Should(Succeed())
	g.Consistently(func() []agentCall { return agent.Calls("SendMessage") }, time.Second, tick).Should(BeEmpty())
}
