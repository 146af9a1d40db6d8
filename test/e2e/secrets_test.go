/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/controller"
)

// The chart installed with secrets.clusterWide=false: the operator, running
// with exactly the chart's RBAC, can read no Secret anywhere until a
// namespace's owner binds the provided ClusterRole in that namespace; then
// the Agent there becomes Ready with its header from a labelled Secret, and
// every other namespace's Secrets stay out of reach.
func TestSecretsByConsentInstall(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	runID := newRunID()
	team := "tether-e2e-consent-" + runID
	newNamespace(t, team)
	r := installChart(t, "tether-consent", "tether-e2e-consent-system-"+runID, "secrets.clusterWide=false")
	sa := operatorServiceAccount(t, r)
	canGetSecrets := func(ns string) bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               fmt.Sprintf("system:serviceaccount:%s:%s", r.namespace, sa),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "creds"},
		}}
		g.Expect(kube.Create(ctx, review)).To(Succeed())
		return review.Status.Allowed
	}
	for _, ns := range []string{team, "kube-system", r.namespace} {
		g.Expect(canGetSecrets(ns)).To(BeFalse(), "the chart alone grants no Secret access (%s)", ns)
	}

	startOperator(t, r)
	url, _ := startWorker(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "creds",
		Labels: map[string]string{controller.AgentCredentialsLabel: "true"}}, StringData: map[string]string{"token": "Bearer e2e"}}
	g.Expect(kube.Create(ctx, secret)).To(Succeed())
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "worker"}, Spec: v1alpha1.AgentSpec{
		URL: url, PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond},
		Headers: []v1alpha1.AgentHeader{{Name: "Authorization", ValueFrom: v1alpha1.SecretKeyRef{Name: "creds", Key: "token"}}},
	}}
	g.Expect(kube.Create(ctx, agent)).To(Succeed())
	g.Eventually(func(g Gomega) {
		a := &v1alpha1.Agent{}
		g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(agent), a)).To(Succeed())
		c := meta.FindStatusCondition(a.Status.Conditions, "Ready")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("forbidden"))
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())

	// The namespace's owner consents for this namespace only.
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "tether-agent-credentials"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tether-consent-agent-credentials-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: r.namespace}}}
	g.Expect(kube.Create(ctx, binding)).To(Succeed())
	// The authorizer learns of a new binding from its informer: a moment later.
	g.Eventually(func() bool { return canGetSecrets(team) }).WithTimeout(timeout).WithPolling(tick).Should(BeTrue())
	g.Expect(canGetSecrets("kube-system")).To(BeFalse())

	w := newWorkspace(t, team)
	w.deleteDelegationsOnCleanup()
	w.waitAgentReady("worker")
	w.task("task", "steps=1 delay=50ms", "")
	d := w.waitPhase("task", v1alpha1.PhaseSucceeded)
	g.Expect(d.Status.Result.Text).To(ContainSubstring("worker did 1 steps"))
}

// operatorServiceAccount is the ServiceAccount the release's Deployment runs as.
func operatorServiceAccount(t *testing.T, r release) string {
	t.Helper()
	deployments := &appsv1.DeploymentList{}
	NewWithT(t).Expect(kube.List(context.Background(), deployments, client.InNamespace(r.namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": r.name})).To(Succeed())
	NewWithT(t).Expect(deployments.Items).To(HaveLen(1))
	return deployments.Items[0].Spec.Template.Spec.ServiceAccountName
}
