/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// installPolicies creates the chart's admission policies and bindings from
// config/admission (files by name), renamed for the test and bound only to
// the given namespaces, so tests running beside it see nothing of them.
func (e *env) installPolicies(files []string, namespaces ...string) {
	e.t.Helper()
	suffix := "-" + e.ns
	only := &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}
	for _, file := range files {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "admission", file))
		e.g.Expect(err).NotTo(HaveOccurred())
		var kind struct{ Kind string }
		e.g.Expect(yaml.Unmarshal(raw, &kind)).To(Succeed())
		var obj client.Object
		switch kind.Kind {
		case "ValidatingAdmissionPolicy":
			obj = &admissionv1.ValidatingAdmissionPolicy{}
		case "MutatingAdmissionPolicy":
			obj = &admissionv1.MutatingAdmissionPolicy{}
		case "ValidatingAdmissionPolicyBinding":
			obj = &admissionv1.ValidatingAdmissionPolicyBinding{}
		case "MutatingAdmissionPolicyBinding":
			obj = &admissionv1.MutatingAdmissionPolicyBinding{}
		default:
			e.t.Fatalf("%s: unexpected kind %q", file, kind.Kind)
		}
		e.g.Expect(yaml.UnmarshalStrict(raw, obj)).To(Succeed(), file)
		obj.SetName(obj.GetName() + suffix)
		switch b := obj.(type) {
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			b.Spec.PolicyName += suffix
			b.Spec.MatchResources = only
		case *admissionv1.MutatingAdmissionPolicyBinding:
			b.Spec.PolicyName += suffix
			b.Spec.MatchResources = only
		}
		e.g.Expect(k8sClient.Create(context.Background(), obj)).To(Succeed(), file)
		e.t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
}

// generated gives d a generated name with its name as the prefix.
func generated(d *v1alpha1.Delegation) *v1alpha1.Delegation {
	d.GenerateName, d.Name = d.Name+"-", ""
	return d
}

// as is a client that impersonates user.
func (e *env) as(user string) client.Client {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.New(c, client.Options{Scheme: scheme})
	e.g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// grantRoles binds the shipped ClusterRoles (config/rbac, by file name) to
// the users in the test's namespace.
func (e *env) grantRoles(roles []string, users ...string) {
	e.t.Helper()
	ctx := context.Background()
	subjects := make([]rbacv1.Subject, 0, len(users))
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, file := range roles {
		raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", file+".yaml"))
		e.g.Expect(err).NotTo(HaveOccurred())
		var role rbacv1.ClusterRole
		e.g.Expect(yaml.Unmarshal(raw, &role)).To(Succeed())
		role.Name = e.ns + "-" + file
		e.g.Expect(k8sClient.Create(ctx, &role)).To(Succeed())
		e.t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), &role) })
		e.g.Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: file},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   subjects})).To(Succeed())
	}
}

var (
	quotaLimitsPolicy = []string{"quota-limits.policy.yaml", "quota-limits.binding.yaml"}
	requesterPolicy   = []string{"requester.policy.yaml", "requester.binding.yaml"}
	requesterMutation = []string{"mutating/requester.mutating-policy.yaml", "mutating/requester.mutating-binding.yaml"}
)

// The chart's quota-limits policy on the real API server: a Delegation that
// asks more than a DelegationQuota of its namespace allows any one
// Delegation is refused with the quota's words; one within it, and one in a
// namespace without a quota, are admitted; an object admitted under a looser
// quota can still be updated when its budget does not change.
func TestQuotaLimitsRefusedAtAdmission(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	other := newNamespace(t)
	e.installPolicies(quotaLimitsPolicy, e.ns, other)
	e.createQuota("team", v1alpha1.QuotaLimits{MaxBudget: map[string]int64{tokens: 50000}, MaxAttempts: ptr.To[int32](3)})

	// Until the API server's informers have the policy, creations pass:
	// each attempt has a name of its own.
	e.g.Eventually(func() error {
		return k8sClient.Create(ctx, generated(e.task("big", "x", withBudget(v1alpha1.Meters{tokens: 80000}))))
	}, eventually, tick).Should(MatchError(ContainSubstring(
		`denied request: DelegationQuota "team" allows at most 50000 tokens per Delegation; this one asks 80000`)))
	retries := func(n int32) func(*v1alpha1.Delegation) {
		return func(d *v1alpha1.Delegation) { d.Spec.Retry = &v1alpha1.RetryPolicy{MaxAttempts: n} }
	}
	e.g.Expect(k8sClient.Create(ctx, e.task("retrying", "x", retries(5)))).To(MatchError(ContainSubstring(
		`denied request: DelegationQuota "team" allows at most 3 attempts per Delegation; this one asks 5`)))
	e.create(e.task("within", "wait within", withBudget(v1alpha1.Meters{tokens: 50000, "calls": 1 << 40}), retries(3)))

	elsewhere := e.task("big", "x", withBudget(v1alpha1.Meters{tokens: 80000}))
	elsewhere.Namespace = other
	e.g.Expect(k8sClient.Create(ctx, elsewhere)).To(Succeed(), "a namespace without a quota is not checked")

	e.updateQuota("team", func(q *v1alpha1.DelegationQuota) { q.Spec.Hard.MaxBudget[tokens] = 100 })
	e.g.Eventually(func() error {
		return k8sClient.Create(ctx, generated(e.task("now-big", "x", withBudget(v1alpha1.Meters{tokens: 101}))))
	}, eventually, tick).Should(MatchError(ContainSubstring("allows at most 100 tokens per Delegation; this one asks 101")))
	e.update("within", func(d *v1alpha1.Delegation) { d.Labels = map[string]string{"touched": "yes"} })
}

// Without the admission policy (switched off, or a cluster without it) the
// operator holds a Delegation over a static limit Pending, reason
// OverQuotaLimit, nothing sent and no place taken: a later one within the
// limits starts under inFlight 1. Raising the limit starts it.
func TestQuotaLimitsHeldByTheOperator(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](1), MaxBudget: map[string]int64{tokens: 50}})
	e.create(e.kitTask("big", "kit", "steps=1 spend=1", withBudget(v1alpha1.Meters{tokens: 100})))
	d := e.waitReason("big", v1alpha1.PhasePending, delegation.ReasonOverQuotaLimit)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team" allows at most 50 tokens per Delegation; this one asks 100: ` +
		"lower spec.budget.meters.tokens or raise the quota's spec.hard.maxBudget"))

	e.create(e.kitTask("small", "kit", "steps=1 spend=1", withBudget(v1alpha1.Meters{tokens: 10})))
	e.waitPhase("small", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "big")).To(BeEmpty())
	e.g.Expect(e.get("big").Status.Outcome.Reason).To(Equal(delegation.ReasonOverQuotaLimit))

	e.updateQuota("team", func(q *v1alpha1.DelegationQuota) { q.Spec.Hard.MaxBudget[tokens] = 100 })
	e.waitPhase("big", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "big")).To(HaveLen(1))
}

// The requester cannot approve their own: alice creates a Delegation (her
// name recorded by the chart's policies, whatever she wrote) and approves
// it, and it still waits; bob's approval sends it.
func TestSelfApprovalDoesNotCount(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.installPolicies(append(requesterPolicy, requesterMutation...), e.ns)
	e.g.Expect(k8sClient.Create(ctx, &v1alpha1.DelegationQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](8)},
			Approval: &v1alpha1.ApprovalThresholds{Agents: []string{"kit"}}}})).To(Succeed())
	e.grantRoles([]string{"delegation_editor_role", "delegationapproval_approver_role"}, "alice", "bob")
	alice, bob := e.as("alice"), e.as("bob")
	e.g.Eventually(func(g Gomega) {
		probe := &v1alpha1.DelegationApproval{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, GenerateName: "probe-"},
			Spec: v1alpha1.DelegationApprovalSpec{DelegationName: "none", Decision: v1alpha1.DecisionApproved}}
		g.Expect(bob.Create(ctx, probe)).To(Succeed())
		g.Expect(probe.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationApprovedBy, "bob"), "the policies are in force")
	}, eventually, tick).Should(Succeed())

	job := e.kitTask("job", "kit", "steps=1 spend=1")
	job.Annotations = map[string]string{v1alpha1.AnnotationRequestedBy: "bob"}
	e.g.Expect(alice.Create(ctx, job)).To(Succeed())
	e.g.Expect(job.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationRequestedBy, "alice"), "the API server records who asked")
	e.waitReason("job", v1alpha1.PhasePending, delegation.ReasonAwaitingApproval)

	byAlice := &v1alpha1.DelegationApproval{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "by-alice"},
		Spec: v1alpha1.DelegationApprovalSpec{DelegationName: "job", Decision: v1alpha1.DecisionApproved}}
	e.g.Expect(alice.Create(ctx, byAlice)).To(Succeed())
	e.g.Expect(byAlice.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationApprovedBy, "alice"))
	e.g.Eventually(func() string { return e.get("job").Status.Outcome.Message }, eventually, tick).Should(ContainSubstring(
		`an approval by the requester (alice) does not count (DelegationApproval "by-alice")`))
	e.g.Eventually(e.eventNotes("job", "Warning", delegation.ReasonSelfApprovalIgnored), eventually, tick).
		Should(ContainElement(`an approval by the requester does not count: DelegationApproval "by-alice" by alice`))
	e.g.Consistently(func(g Gomega) {
		g.Expect(e.get("job").Status.Outcome.Reason).To(Equal(delegation.ReasonAwaitingApproval))
		g.Expect(ka.Sends(e.ns, "job")).To(BeEmpty())
	}, time.Second, tick).Should(Succeed())

	// Rewriting the record is refused or undone.
	e.g.Expect(alice.Patch(ctx, job, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"delegation.tether.dev/requested-by":"bob"}}}`)))).To(Succeed())
	e.g.Expect(job.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationRequestedBy, "alice"))

	e.g.Expect(bob.Create(ctx, &v1alpha1.DelegationApproval{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "by-bob"},
		Spec: v1alpha1.DelegationApprovalSpec{DelegationName: "job", Decision: v1alpha1.DecisionApproved}})).To(Succeed())
	e.waitPhase("job", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "job")).To(HaveLen(1))
	e.g.Eventually(e.eventNotes("job", "Normal", delegation.ReasonApproved), eventually, tick).
		Should(ContainElement(`approved by DelegationApproval "by-bob"`))
}

// Where the cluster has no MutatingAdmissionPolicy, the validating policy
// alone keeps the record true: at creation it may only name the requester
// (or be left out), and it can be neither added nor changed later.
func TestRequesterRecordValidatedWithoutMutation(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.installPolicies(requesterPolicy, e.ns)
	e.grantRoles([]string{"delegation_editor_role"}, "alice")
	alice := e.as("alice")
	forged := func(name, user string) *v1alpha1.Delegation {
		d := e.task(name, "x")
		d.Annotations = map[string]string{v1alpha1.AnnotationRequestedBy: user}
		return d
	}
	e.g.Eventually(func() error { return alice.Create(ctx, generated(forged("forged", "bob"))) }, eventually, tick).
		Should(MatchError(ContainSubstring("delegation.tether.dev/requested-by must name the user who creates the object (alice) or be left out")))
	e.g.Expect(alice.Create(ctx, forged("honest", "alice"))).To(Succeed())
	unrecorded := e.task("unrecorded", "x")
	e.g.Expect(alice.Create(ctx, unrecorded)).To(Succeed())
	for _, d := range []*v1alpha1.Delegation{forged("honest", "alice"), unrecorded} {
		e.g.Expect(alice.Patch(ctx, d, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"delegation.tether.dev/requested-by":"bob"}}}`)))).To(MatchError(ContainSubstring(
			"delegation.tether.dev/requested-by is recorded when the object is created and cannot change")), d.Name)
	}
}
