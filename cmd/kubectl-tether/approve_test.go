/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// approve and deny create DelegationApprovals the API server accepts; a
// denial without --reason is refused before anything is written.
func TestClusterApproveAndDeny(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	approvals := func() []v1alpha1.DelegationApproval {
		var list v1alpha1.DelegationApprovalList
		g.Expect(apiServer.client.List(context.Background(), &list, client.InNamespace(s.ns))).To(Succeed())
		return list.Items
	}

	res := kubectlTether(s.ns, "approve", "child", "--reason", "fits the quarter's budget")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(MatchRegexp(`^delegation "child": Approved by DelegationApproval "child-[a-z0-9]+"\n$`))
	list := approvals()
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].Spec).To(Equal(v1alpha1.DelegationApprovalSpec{
		DelegationName: "child", Decision: v1alpha1.DecisionApproved, Reason: "fits the quarter's budget"}))

	res = kubectlTether(s.ns, "deny", "root")
	g.Expect(res.code).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`required flag(s) "reason" not set`))
	g.Expect(approvals()).To(HaveLen(1), "nothing written")

	res = kubectlTether(s.ns, "deny", "root", "--reason", "too costly")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(MatchRegexp(`^delegation "root": Denied by DelegationApproval "root-[a-z0-9]+"\n$`))
	g.Expect(approvals()).To(ContainElement(HaveField("Spec", v1alpha1.DelegationApprovalSpec{
		DelegationName: "root", Decision: v1alpha1.DecisionDenied, Reason: "too costly"})))

	res = kubectlTether(s.ns, "approve", "grandchild")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation \"grandchild\" is already Succeeded; nothing to decide\n"))
	g.Expect(approvals()).To(HaveLen(2))

	res = kubectlTether(s.ns, "approve", "nope")
	g.Expect(res.code).To(Equal(1))
	g.Expect(res.stderr).To(Equal(`error: delegations.delegation.tether.dev "nope" not found` + "\n"))
}
