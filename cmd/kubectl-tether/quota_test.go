/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// `kubectl tether quota` shows each limit's use against it, as stored in
// the quota's status on the API server.
func TestClusterQuota(t *testing.T) {
	g := NewWithT(t)
	startAPIServer(t)
	ctx := context.Background()
	c := apiServer.client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())

	res := kubectlTether(ns.Name, "quota")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stderr).To(ContainSubstring("No DelegationQuotas found."))

	q := &v1alpha1.DelegationQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](2), Depth: ptr.To[int32](3),
			MaxBudget: map[string]int64{"tokens": 50000}, MaxAttempts: ptr.To[int32](3),
			Meters: []v1alpha1.MeterLimit{{Name: "tokens", Limit: 100000, Window: metav1.Duration{Duration: 24 * time.Hour}}}}}}
	g.Expect(c.Create(ctx, q)).To(Succeed())
	q.Status.Used = v1alpha1.QuotaUsed{InFlight: 2, Waiting: 5, Meters: []v1alpha1.MeterUse{{Name: "tokens", Used: 90000}}}
	g.Expect(c.Status().Update(ctx, q)).To(Succeed())

	res = kubectlTether(ns.Name, "quota")
	g.Expect(res.code).To(Equal(0), res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	g.Expect(lines).To(HaveLen(7), res.stdout)
	g.Expect(lines[0]).To(MatchRegexp(`^QUOTA\s+RESOURCE\s+USED\s+HARD$`))
	g.Expect(lines[1]).To(MatchRegexp(`^team\s+inFlight\s+2\s+2$`))
	g.Expect(lines[2]).To(MatchRegexp(`^team\s+depth\s+-\s+3$`))
	g.Expect(lines[3]).To(MatchRegexp(`^team\s+maxBudget.tokens\s+-\s+50000$`))
	g.Expect(lines[4]).To(MatchRegexp(`^team\s+maxAttempts\s+-\s+3$`))
	g.Expect(lines[5]).To(MatchRegexp(`^team\s+tokens/24h\s+90000\s+100000$`))
	g.Expect(lines[6]).To(MatchRegexp(`^team\s+waiting\s+5\s+-$`))

	res = kubectlTether(ns.Name, "quota", "-A")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(MatchRegexp(`(?m)^NAMESPACE\s+QUOTA\s+RESOURCE\s+USED\s+HARD$`))
	g.Expect(res.stdout).To(MatchRegexp(`(?m)^` + ns.Name + `\s+team\s+inFlight\s+2\s+2$`))
}
