/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

// Workload identity through the TypeScript agentkit on a real API server:
// ts-worker-identity serves with tokenReview (its audience) and operator
// (the suite's operator's ServiceAccount), reviewing tokens as a
// ServiceAccount of its own that holds system:auth-delegator. The operator
// sends a token of its ServiceAccount to Agents with
// spec.auth.serviceAccountToken. What the Go kit does with the same tokens
// is in internal/controller (workload_identity_test.go).

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
)

const (
	// The suite's operator runs as this ServiceAccount (the chart's
	// --service-account-namespace and --service-account-name).
	operatorNamespace      = "tether-system"
	operatorServiceAccount = "tether"
	// tsWorkerServiceAccount is ts-worker-identity's own identity, in operatorNamespace.
	tsWorkerServiceAccount = "ts-worker"
	tsIdentityAudience     = "ts-worker-identity"
)

// tsIdentityWorker is the sample checking its callers with TokenReview for
// tsIdentityAudience and proving claims only from the operator.
var tsIdentityWorker *jsAgent

func operatorUsername() string {
	return "system:serviceaccount:" + operatorNamespace + ":" + operatorServiceAccount
}

// serviceAccountTokens hands out tokens of a ServiceAccount, as the operator gets its own.
func serviceAccountTokens(cfg *rest.Config, ns, name string) (*agentio.ServiceAccountTokens, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &agentio.ServiceAccountTokens{ServiceAccounts: cs.CoreV1(), Namespace: ns, Name: name}, nil
}

// writeAgentIdentityKubeconfig creates the operator's and the sample's
// ServiceAccounts, grants the sample's what an agent on the kit needs
// (system:auth-delegator for TokenReview; delegate() and its Events), and
// writes a kubeconfig holding a token of the sample's ServiceAccount, as
// its pod would have.
func writeAgentIdentityKubeconfig(ctx context.Context, cfg *rest.Config, path string) error {
	const role = "interop-ts-worker"
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: tsWorkerServiceAccount}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorServiceAccount}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: tsWorkerServiceAccount}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"delegations"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"agents"}, Verbs: []string{"get"}},
			{APIGroups: []string{eventsv1.GroupName}, Resources: []string{"events"}, Verbs: []string{"create"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-auth-delegator"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}},
	}
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil {
			return err
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, tsWorkerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return writeKubeconfig(&rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
		BearerToken: tr.Status.Token}, path)
}

func withServiceAccountToken(audience string) func(*v1alpha1.Agent) {
	return func(a *v1alpha1.Agent) {
		a.Spec.Auth = &v1alpha1.AgentAuth{ServiceAccountToken: &v1alpha1.ServiceAccountTokenAuth{Audience: audience}}
	}
}

// identity is a ServiceAccount created in the test's namespace, with its tokens.
func (e *env) identity(name string) *agentio.ServiceAccountTokens {
	e.t.Helper()
	e.g.Expect(kube.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}})).To(Succeed())
	tokens, err := serviceAccountTokens(restConfig, e.ns, name)
	e.g.Expect(err).NotTo(HaveOccurred())
	return tokens
}

// dialAs reaches the test's agent with a token of tokens bound to
// audience; nil tokens send no Authorization header.
func (e *env) dialAs(tokens *agentio.ServiceAccountTokens, audience string) a2a.Client {
	e.t.Helper()
	ep := a2a.Endpoint{URL: e.agent.URL()}
	if tokens != nil {
		ep.BearerToken = func(ctx context.Context) (string, error) { return tokens.Token(ctx, audience, 600) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a2a.Dial(ctx, ep)
	e.g.Expect(err).NotTo(HaveOccurred(), "the card is public")
	e.t.Cleanup(c.Close)
	return c
}

// expectUnauthenticated checks that err is the agent's HTTP 401.
func (e *env) expectUnauthenticated(err error, what string) {
	e.t.Helper()
	e.g.Expect(err).To(HaveOccurred(), what)
	ae, ok := errors.AsType[*a2a.Error](err)
	e.g.Expect(ok).To(BeTrue(), "%s: %v", what, err)
	e.g.Expect(ae.Code).To(Equal(401), what)
	e.g.Expect(a2a.Classify(err)).To(Equal(a2a.ClassRefused), what)
}

// sendAndWait sends text and waits for the task to end; it returns the task.
func sendAndWait(g *WithT, c a2a.Client, req a2a.SendRequest) *a2a.Task {
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	sent, err := c.Send(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	var got *a2a.Task
	g.Eventually(func(g Gomega) {
		got, err = c.Get(ctx, sent.ID, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.State).To(BeElementOf(a2a.StateCompleted, a2a.StateFailed))
	}, eventually, tick).Should(Succeed())
	return got
}

// The operator's token for the Agent's audience passes the TypeScript
// kit's TokenReview and the task sees the operator as its caller; a token
// bound to another audience, none, one that is not a token and one of a
// ServiceAccount that was deleted are refused with HTTP 401 before the
// executor runs. A live ServiceAccount's token for the audience is
// authenticated as that ServiceAccount: the kit authenticates every
// caller, and the operator option decides whose claims count.
func TestTSAgentkitAuthenticatesTheOperatorWithTokenReview(t *testing.T) {
	e := setupTSAgent(t, tsIdentityWorker, withServiceAccountToken(tsIdentityAudience))
	e.create(e.tsTask("whoami", "whoami"))
	d := e.waitPhase("whoami", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("caller: " + operatorUsername()))
	e.g.Expect(e.agent.Logged("task " + d.Status.TaskID + " received for Delegation " + e.ns + "/whoami")).To(BeTrue())

	operator, err := serviceAccountTokens(restConfig, operatorNamespace, operatorServiceAccount)
	e.g.Expect(err).NotTo(HaveOccurred())
	other := e.identity("other")
	gone := e.identity("gone")
	goneToken, err := gone.Token(context.Background(), tsIdentityAudience, 600)
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(kube.Delete(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "gone"}})).To(Succeed())
	fixed := func(token string) a2a.Client {
		c, err := a2a.Dial(context.Background(), a2a.Endpoint{URL: e.agent.URL(),
			BearerToken: func(context.Context) (string, error) { return token, nil }})
		e.g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(c.Close)
		return c
	}
	for what, c := range map[string]a2a.Client{
		"the operator's token bound to another audience":      e.dialAs(operator, "another-agent"),
		"another ServiceAccount's token for another audience": e.dialAs(other, "another-agent"),
		"no token":                              e.dialAs(nil, ""),
		"a bearer that is not a token":          fixed("not-a-token"),
		"the token of a deleted ServiceAccount": fixed(goneToken),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Send(ctx, a2a.SendRequest{Text: "whoami"})
		cancel()
		e.expectUnauthenticated(err, what)
	}

	got := sendAndWait(e.g, e.dialAs(other, tsIdentityAudience), a2a.SendRequest{Text: "whoami"})
	e.g.Expect(got.State).To(Equal(a2a.StateCompleted))
	e.g.Expect(got.StatusText).To(Equal("caller: system:serviceaccount:" + e.ns + ":other"))
}

// With the operator option the TypeScript kit proves a claim only from the
// operator's identity: the operator's Delegation delegates (its child
// reaches the agent authenticated, too); the same claim from another
// ServiceAccount, authenticated for the audience, fails at step 0 of the
// claim check and creates nothing, and records no Event; without a token
// it does not reach the agent's executor.
func TestTSAgentkitProvesClaimsOnlyFromTheOperatorsIdentity(t *testing.T) {
	e := setupTSAgent(t, tsIdentityWorker, withServiceAccountToken(tsIdentityAudience))
	e.create(e.tsTask("root", "delegate "+tsAgentName+" whoami"))
	root := e.waitPhase("root", v1alpha1.PhaseSucceeded)
	e.g.Expect(root.Status.Result.Text).To(MatchRegexp(`^child root-child-[0-9a-f]{10} Succeeded: caller: ` + operatorUsername() + `$`))
	children := func() []v1alpha1.Delegation {
		list := &v1alpha1.DelegationList{}
		e.g.Expect(kube.List(context.Background(), list, client.InNamespace(e.ns))).To(Succeed())
		var out []v1alpha1.Delegation
		for _, d := range list.Items {
			if d.Spec.ParentRef != nil && d.Spec.ParentRef.Name == "root" {
				out = append(out, d)
			}
		}
		return out
	}
	e.g.Expect(children()).To(HaveLen(1))

	claim := map[string]any{a2a.DelegationMetadataKey: e.ns + "/root"}
	intruder := e.identity("intruder")
	got := sendAndWait(e.g, e.dialAs(intruder, tsIdentityAudience), a2a.SendRequest{Text: "delegate " + tsAgentName + " whoami", Metadata: claim})
	e.g.Expect(got.State).To(Equal(a2a.StateFailed))
	e.g.Expect(got.StatusText).To(And(ContainSubstring("is not the named Delegation's"),
		ContainSubstring("only the operator ("+operatorUsername()+") may name"),
		ContainSubstring("came from system:serviceaccount:"+e.ns+":intruder")))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := e.dialAs(nil, "").Send(ctx, a2a.SendRequest{Text: "delegate " + tsAgentName + " whoami", Metadata: claim})
	e.expectUnauthenticated(err, "a claim without a token")

	e.g.Expect(children()).To(HaveLen(1), "nothing more was created")
	events := &eventsv1.EventList{}
	e.g.Expect(kube.List(context.Background(), events, client.InNamespace(e.ns))).To(Succeed())
	e.g.Expect(events.Items).NotTo(ContainElement(HaveField("Reason", "ClaimNotProven")),
		"a claim refused at step 0 learns nothing and writes nothing")
}
