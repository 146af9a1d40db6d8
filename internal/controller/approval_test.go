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
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func (e *env) decide(name, delegationName string, decision v1alpha1.Decision, reason string) {
	e.t.Helper()
	e.g.Expect(k8sClient.Create(context.Background(), &v1alpha1.DelegationApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec:       v1alpha1.DelegationApprovalSpec{DelegationName: delegationName, Decision: decision, Reason: reason}})).To(Succeed())
}

// eventNotes are the notes of the Events of type kind with reason about one object.
func (e *env) eventNotes(name, kind, reason string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		e.g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(e.ns))).To(Succeed())
		var out []string
		for _, ev := range list.Items {
			if ev.Regarding.Name == name && ev.Reason == reason && ev.Type == kind {
				out = append(out, ev.Note)
			}
		}
		return out
	}
}

// A quota's approval thresholds hold children Pending/AwaitingApproval with
// nothing sent and nothing reserved; an approval sends one to success, a
// denial fails the other (Denied, with the denier's reason) and the parent's
// ledger holds nothing for it. Both decisions are Events.
func TestApprovalHoldsSendsUntilApprovedOrDenied(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.g.Expect(k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](8)},
			Approval: &v1alpha1.ApprovalThresholds{Meters: map[string]int64{tokens: 50}}}})).To(Succeed())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 300}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	for _, name := range []string{"big-yes", "big-no"} {
		e.create(e.kitTask(name, "kit", "steps=1 spend=10", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
		d := e.waitReason(name, v1alpha1.PhasePending, delegation.ReasonAwaitingApproval)
		e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team" needs approval: budget meter tokens 100 is above 50; ` +
			"approve with 'kubectl tether approve " + name + "' or deny with 'kubectl tether deny " + name + " --reason ...'"))
	}
	e.g.Consistently(func(g Gomega) {
		for _, name := range []string{"big-yes", "big-no"} {
			d := e.get(name)
			g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonAwaitingApproval))
			g.Expect(d.Status.SendStarted).To(BeNil())
			g.Expect(ka.Sends(e.ns, name)).To(BeEmpty())
		}
		g.Expect(ledger(e.get("pool")).Reservations).To(BeEmpty(), "nothing is reserved while waiting")
	}, time.Second, tick).Should(Succeed())

	e.decide("yes", "big-yes", v1alpha1.DecisionApproved, "")
	e.waitPhase("big-yes", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "big-yes")).To(HaveLen(1))
	e.g.Eventually(e.eventNotes("big-yes", "Normal", delegation.ReasonApproved), eventually, tick).
		Should(ContainElement(`approved by DelegationApproval "yes"`))

	e.decide("no", "big-no", v1alpha1.DecisionDenied, "100k tokens is more than this tree may spend")
	d := e.waitReason("big-no", v1alpha1.PhaseFailed, delegation.ReasonDenied)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`denied by DelegationApproval "no": 100k tokens is more than this tree may spend`))
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailurePolicyRefusal))
	e.g.Expect(ka.Sends(e.ns, "big-no")).To(BeEmpty())
	e.g.Eventually(e.eventNotes("big-no", "Warning", delegation.ReasonDenied), eventually, tick).
		Should(ContainElement(ContainSubstring("100k tokens is more than this tree may spend")))
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 10}), "only the approved child is charged")
		g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 290}))
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}

// Who may approve is RBAC's: a user without the shipped approver role is
// refused by the API server; bound to it in the namespace, the same user
// may approve. A decision cannot be changed, and a denial needs a reason.
func TestApprovalCreationIsControlledByRBAC(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	as := func(user string) client.Client {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
		cl, err := client.New(c, client.Options{Scheme: scheme})
		e.g.Expect(err).NotTo(HaveOccurred())
		return cl
	}
	approval := func(name string) *v1alpha1.DelegationApproval {
		return &v1alpha1.DelegationApproval{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Spec: v1alpha1.DelegationApprovalSpec{DelegationName: "d", Decision: v1alpha1.DecisionApproved}}
	}
	err := as("requester").Create(ctx, approval("by-requester"))
	e.g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a user without the role is refused: %v", err)

	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "delegationapproval_approver_role.yaml"))
	e.g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	e.g.Expect(yaml.Unmarshal(raw, &role)).To(Succeed())
	role.Name = e.ns + "-approver"
	e.g.Expect(k8sClient.Create(ctx, &role)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), &role) })
	e.g.Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "approvers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "lead"}}})).To(Succeed())
	e.g.Eventually(func() error { return as("lead").Create(ctx, approval("by-lead")) }, eventually, tick).Should(Succeed())
	e.g.Expect(apierrors.IsForbidden(as("requester").Create(ctx, approval("again")))).To(BeTrue())

	var a v1alpha1.DelegationApproval
	e.g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(approval("by-lead")), &a)).To(Succeed())
	a.Spec.Decision = v1alpha1.DecisionDenied
	a.Spec.Reason = "changed my mind"
	e.g.Expect(k8sClient.Update(ctx, &a)).To(MatchError(ContainSubstring("spec is immutable")))
	denial := approval("no-reason")
	denial.Spec.Decision = v1alpha1.DecisionDenied
	e.g.Expect(k8sClient.Create(ctx, denial)).To(MatchError(ContainSubstring("a denial needs a reason")))
}

// Raising a quota's threshold wakes what waited for approval under it; an
// approval made before the Delegation existed decides nothing.
func TestApprovalThresholdRaisedStartsWhatWaited(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	quota := &v1alpha1.DelegationQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](8)},
			Approval: &v1alpha1.ApprovalThresholds{Agents: []string{"kit"}}}}
	e.g.Expect(k8sClient.Create(context.Background(), quota)).To(Succeed())
	e.decide("early", "job", v1alpha1.DecisionApproved, "")
	time.Sleep(1100 * time.Millisecond) // creation times are in seconds
	e.create(e.kitTask("job", "kit", "steps=1 spend=1"))
	d := e.waitReason("job", v1alpha1.PhasePending, delegation.ReasonAwaitingApproval)
	e.g.Expect(d.Status.Outcome.Message).To(HavePrefix(`DelegationQuota "team" needs approval: Agent "kit" is listed`))
	e.g.Consistently(func() string { return e.get("job").Status.Outcome.Reason }, time.Second, tick).
		Should(Equal(delegation.ReasonAwaitingApproval), "the earlier approval was for an earlier Delegation")

	e.g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(quota), quota)).To(Succeed())
	quota.Spec.Approval.Agents = []string{"other"}
	e.g.Expect(k8sClient.Update(context.Background(), quota)).To(Succeed())
	e.waitPhase("job", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "job")).To(HaveLen(1))
}

// Bad approval thresholds are refused by the API server.
func TestApprovalThresholdsValidatedAtAdmission(t *testing.T) {
	e := setup(t)
	quota := func(name string, a *v1alpha1.ApprovalThresholds) error {
		return k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Spec:       v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](8)}, Approval: a}})
	}
	e.g.Expect(quota("empty", &v1alpha1.ApprovalThresholds{})).To(MatchError(ContainSubstring("spec.approval")))
	e.g.Expect(quota("negative", &v1alpha1.ApprovalThresholds{Meters: map[string]int64{tokens: -1}})).
		To(MatchError(ContainSubstring("approval meters must not be negative")))
	e.g.Expect(quota("deep", &v1alpha1.ApprovalThresholds{DepthAbove: ptr.To[int32](65)})).To(MatchError(ContainSubstring("spec.approval.depthAbove")))
	e.g.Expect(quota("blank-agent", &v1alpha1.ApprovalThresholds{Agents: []string{""}})).To(MatchError(ContainSubstring("spec.approval.agents")))
	e.g.Expect(quota("ok", &v1alpha1.ApprovalThresholds{DepthAbove: ptr.To[int32](0)})).To(Succeed())
}
