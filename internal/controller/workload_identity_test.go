/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// countingTokens counts the TokenRequests made through it, and fails them
// while down is set.
type countingTokens struct {
	corev1client.ServiceAccountsGetter
	n    *atomic.Int32
	down *atomic.Bool
}

func (c countingTokens) ServiceAccounts(ns string) corev1client.ServiceAccountInterface {
	return countingTokenRequests{ServiceAccountInterface: c.ServiceAccountsGetter.ServiceAccounts(ns), c: c}
}

type countingTokenRequests struct {
	corev1client.ServiceAccountInterface
	c countingTokens
}

func (r countingTokenRequests) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest,
	opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	r.c.n.Add(1)
	if r.c.down.Load() {
		return nil, errors.New("the API server is away")
	}
	return r.ServiceAccountInterface.CreateToken(ctx, name, tr, opts)
}

// callerEcho completes every task with the name of the caller agentkit
// authenticated ("" for none).
type callerEcho struct{}

func (callerEcho) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		c, _ := agentkit.CallerFrom(ctx)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(c.Username))), nil)
	}
}

func (callerEcho) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// serviceAccount creates a ServiceAccount and a token source for it.
func serviceAccount(t *testing.T, ns, name string) *agentio.ServiceAccountTokens {
	t.Helper()
	NewWithT(t).Expect(k8sClient.Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	return &agentio.ServiceAccountTokens{ServiceAccounts: kubernetes.NewForConfigOrDie(cfg).CoreV1(), Namespace: ns, Name: name}
}

// verifyingAgent serves exec with agentkit checking callers with
// TokenReview for audience, claims proven only from operator.
func verifyingAgent(t *testing.T, exec a2asrv.AgentExecutor, audience, operator string) *kitAgent {
	reviews := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().TokenReviews()
	return newKitAgent(t, exec, agentkit.WithTokenReview(reviews, audience), agentkit.WithOperator(operator))
}

// dialAs reaches an agent with the tokens of a ServiceAccount for an
// audience; nil tokens send no Authorization header.
func dialAs(t *testing.T, url string, tokens *agentio.ServiceAccountTokens, audience string) tethera2a.Client {
	t.Helper()
	ep := tethera2a.Endpoint{URL: url}
	if tokens != nil {
		ep.BearerToken = func(ctx context.Context) (string, error) { return tokens.Token(ctx, audience, 600) }
	}
	c, err := tethera2a.Dial(context.Background(), ep)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "the card is public")
	t.Cleanup(c.Close)
	return c
}

// The operator's token comes from the TokenRequest API, is reused until
// 80% of its lifetime has passed, and is accepted by agentkit's TokenReview
// only at the audience it was bound to.
func TestTheOperatorsTokenPassesTokenReviewOnlyForItsAudience(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	operator := serviceAccount(t, ns, "tether-operator")
	var requests atomic.Int32
	var down atomic.Bool
	operator.ServiceAccounts = countingTokens{ServiceAccountsGetter: operator.ServiceAccounts, n: &requests, down: &down}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	operator.Clock = clock

	first, err := operator.Token(ctx, "agent-a", 600)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := operator.Token(ctx, "agent-a", 600)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first), "a fresh token is reused")
	g.Expect(requests.Load()).To(Equal(int32(1)))
	clock.SetTime(clock.Now().Add(479 * time.Second))
	_, _ = operator.Token(ctx, "agent-a", 600)
	g.Expect(requests.Load()).To(Equal(int32(1)), "before 80% of 600s")
	clock.SetTime(clock.Now().Add(2 * time.Second))
	renewed, err := operator.Token(ctx, "agent-a", 600)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requests.Load()).To(Equal(int32(2)), "renewed past 80%")
	g.Expect(renewed).NotTo(Equal(first))
	_, err = operator.Token(ctx, "agent-b", 600)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requests.Load()).To(Equal(int32(3)), "one token per audience")

	// Due for renewal while no new token can be had: the one in hand
	// serves until it expires.
	down.Store(true)
	clock.SetTime(clock.Now().Add(481 * time.Second))
	g.Expect(operator.Token(ctx, "agent-a", 600)).To(Equal(renewed))
	g.Expect(requests.Load()).To(Equal(int32(4)), "renewal was tried")
	clock.SetTime(clock.Now().Add(120 * time.Second))
	_, err = operator.Token(ctx, "agent-a", 600)
	g.Expect(err).To(MatchError(ContainSubstring("the API server is away")), "an expired token is never sent")
	down.Store(false)
	clock.SetTime(time.Now())

	agent := verifyingAgent(t, callerEcho{}, "agent-a", operator.Username())
	task, err := dialAs(t, agent.URL(), operator, "agent-a").Send(ctx, tethera2a.SendRequest{MessageID: "m-1", Text: "who am I"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		got, err := dialAs(t, agent.URL(), operator, "agent-a").Get(ctx, task.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.State).To(Equal(tethera2a.StateCompleted))
		g.Expect(got.StatusText).To(Equal("system:serviceaccount:" + ns + ":tether-operator"))
	}, eventually, tick).Should(Succeed())

	for what, c := range map[string]tethera2a.Client{
		"a token bound to another audience": dialAs(t, agent.URL(), operator, "agent-b"),
		"no token":                          dialAs(t, agent.URL(), nil, ""),
	} {
		_, err := c.Send(ctx, tethera2a.SendRequest{MessageID: "m-2", Text: "who am I"})
		g.Expect(err).To(HaveOccurred(), what)
		e, ok := errors.AsType[*tethera2a.Error](err)
		g.Expect(ok).To(BeTrue(), what)
		g.Expect(e.Code).To(Equal(401), what)
		g.Expect(tethera2a.Classify(err)).To(Equal(tethera2a.ClassRefused), what)
	}
}

// Agents with spec.auth.serviceAccountToken get the operator's token for
// their audience; agentkit proves claims only from the operator: a claim
// replayed by another ServiceAccount, or by a caller without a token, is
// refused, and the operator's task is not even visible to them.
func TestClaimsAreProvenOnlyFromTheOperatorsIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	operator := serviceAccount(t, e.ns, "tether-operator")
	intruder := serviceAccount(t, e.ns, "intruder")
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) { r.Connector.Tokens = operator })

	workers := verifyingAgent(t, kitWorker(), "worker", operator.Username())
	orch := verifyingAgent(t, sample.Orchestrator{Kube: k8sClient, WorkerAgent: "worker", Fanout: 1, Meter: tokens},
		"orchestrator", operator.Username())
	for name, url := range map[string]string{"worker": workers.URL(), "orchestrator": orch.URL()} {
		e.createAgent(name, url, func(a *v1alpha1.Agent) {
			a.Spec.Auth = &v1alpha1.AgentAuth{ServiceAccountToken: &v1alpha1.ServiceAccountTokenAuth{Audience: name}}
		})
	}

	// The operator's own claim is proven: the orchestrator delegates.
	e.create(e.kitTask("root", "orchestrator", "summarise fanout=1", withBudget(v1alpha1.Meters{tokens: 1000})))
	root := e.waitPhase("root", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.children(e.g, "root")).To(HaveLen(1))
	e.g.Expect(workers.Sends(e.ns, "")).NotTo(BeEmpty(), "the child reached the worker, authenticated")

	// Another identity replays the claim with everything the operator sent.
	claim := map[string]any{tethera2a.DelegationMetadataKey: e.ns + "/root"}
	as := dialAs(t, orch.URL(), intruder, "orchestrator")
	_, err := as.Send(ctx, tethera2a.SendRequest{MessageID: "reply", TaskID: root.Status.TaskID, Text: "summarise fanout=3", Metadata: claim})
	e.g.Expect(err).To(MatchError(ContainSubstring("TaskNotFound")), "the operator's task is the operator's alone")
	task, err := as.Send(ctx, tethera2a.SendRequest{MessageID: "replayed", Text: "summarise fanout=3", Metadata: claim})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Eventually(func(g Gomega) {
		got, err := as.Get(ctx, task.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.State).To(Equal(tethera2a.StateFailed))
		g.Expect(got.StatusText).To(And(ContainSubstring("not the named Delegation's"),
			ContainSubstring("only the operator ("+operator.Username()+") may name"),
			ContainSubstring("came from system:serviceaccount:"+e.ns+":intruder")))
	}, eventually, tick).Should(Succeed())

	// Without a token nothing reaches the orchestrator's executor.
	_, err = dialAs(t, orch.URL(), nil, "").Send(ctx, tethera2a.SendRequest{MessageID: "anonymous", Text: "summarise", Metadata: claim})
	e.g.Expect(err).To(MatchError(ContainSubstring("401")))
	e.g.Expect(e.children(e.g, "root")).To(HaveLen(1), "nothing more was created")
}

// An Agent cannot name an Authorization header besides auth, and the
// token's lifetime is bounded like TokenRequest's.
func TestAgentAuthIsValidatedAtAdmission(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	agent := func(name string, mutate func(*v1alpha1.AgentSpec)) *v1alpha1.Agent {
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.AgentSpec{URL: "http://agent.test",
			Auth: &v1alpha1.AgentAuth{ServiceAccountToken: &v1alpha1.ServiceAccountTokenAuth{Audience: "agent"}}}}
		mutate(&a.Spec)
		return a
	}
	ok := agent("ok", func(*v1alpha1.AgentSpec) {})
	g.Expect(k8sClient.Create(ctx, ok)).To(Succeed())
	g.Expect(ok.Spec.Auth.ServiceAccountToken.ExpirationSeconds).To(HaveValue(Equal(int64(3600))), "the default")

	for _, tc := range []struct {
		name, message string
		mutate        func(*v1alpha1.AgentSpec)
	}{
		{"header", "an Authorization header cannot be set together with auth", func(s *v1alpha1.AgentSpec) {
			s.Headers = []v1alpha1.AgentHeader{{Name: "authorization", ValueFrom: v1alpha1.SecretKeyRef{Name: "s", Key: "k"}}}
		}},
		{"short", "should be greater than or equal to 600", func(s *v1alpha1.AgentSpec) {
			s.Auth.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](599)
		}},
		{"long", "should be less than or equal to 86400", func(s *v1alpha1.AgentSpec) {
			s.Auth.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](86401)
		}},
		{"no-audience", "spec.auth.serviceAccountToken.audience", func(s *v1alpha1.AgentSpec) { s.Auth.ServiceAccountToken.Audience = "" }},
		{"empty", "auth needs serviceAccountToken", func(s *v1alpha1.AgentSpec) { s.Auth.ServiceAccountToken = nil }},
	} {
		g.Expect(k8sClient.Create(ctx, agent(tc.name, tc.mutate))).To(MatchError(ContainSubstring(tc.message)), tc.name)
	}
	other := agent("other-header", func(s *v1alpha1.AgentSpec) {
		s.Headers = []v1alpha1.AgentHeader{{Name: "X-Api-Key", ValueFrom: v1alpha1.SecretKeyRef{Name: "s", Key: "k"}}}
	})
	g.Expect(k8sClient.Create(ctx, other)).To(Succeed(), "other headers go along with auth")
}

// An operator that does not know its own ServiceAccount sends nothing to
// an Agent that asks for its token, and says why on the Agent.
func TestAnOperatorWithoutItsServiceAccountSaysSoOnTheAgent(t *testing.T) {
	e := setup(t)
	agent := verifyingAgent(t, callerEcho{}, "agent-a", "system:serviceaccount:tether-system:tether")
	e.createAgent("needs-token", agent.URL(), func(a *v1alpha1.Agent) {
		a.Spec.Auth = &v1alpha1.AgentAuth{ServiceAccountToken: &v1alpha1.ServiceAccountTokenAuth{Audience: "agent-a"}}
	})
	e.g.Eventually(e.agentReady("needs-token"), eventually, tick).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Message", ContainSubstring("does not know its own ServiceAccount"))))
}
