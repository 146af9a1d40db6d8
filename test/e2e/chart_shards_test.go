/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// shards=3: one Deployment, one PodDisruptionBudget and one push Service per
// shard, each selecting only its shard's pods; each shard's operator gets
// its shard number and its own push URL, and GOMEMLIMIT from its limit.
func TestChartShards(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t, "shards=3", "replicasPerShard=2", "push.enabled=true", "push.keySecret.name=push-key")
	g.Expect(m.kind("Deployment")).To(HaveLen(3))
	g.Expect(m.kind("PodDisruptionBudget")).To(HaveLen(3))
	for i := range 3 {
		name := fmt.Sprintf("tether-shard-%d", i)
		shardLabel := HaveKeyWithValue("delegation.tether.dev/shard", fmt.Sprint(i))
		d := decode[appsv1.Deployment](t, m.one(t, "Deployment", name))
		g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
		g.Expect(d.Spec.Selector.MatchLabels).To(shardLabel)
		g.Expect(d.Spec.Template.Labels).To(shardLabel)
		c := d.Spec.Template.Spec.Containers[0]
		g.Expect(c.Args).To(ContainElements("--shards=3", fmt.Sprintf("--shard=%d", i), "--leader-elect",
			"--leader-election-lease-duration=6s", fmt.Sprintf("--push-url=http://%s-push.tether-system.svc:8082", name)))
		g.Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "manager", Resource: "limits.memory"}}}))
		pdb := decode[policyv1.PodDisruptionBudget](t, m.one(t, "PodDisruptionBudget", name))
		g.Expect(pdb.Spec.Selector.MatchLabels).To(shardLabel)
		svc := decode[corev1.Service](t, m.one(t, "Service", name+"-push"))
		g.Expect(svc.Spec.Selector).To(shardLabel)
	}

	// Unsharded, the release keeps the names and selector it always had.
	d := decode[appsv1.Deployment](t, renderChart(t).one(t, "Deployment", "tether"))
	g.Expect(d.Spec.Selector.MatchLabels).NotTo(HaveKey("delegation.tether.dev/shard"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--shards")))

	out, err := runHelm(t, "template", "tether", chartDir, "--set", "shards=2", "--set", "push.enabled=true")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("push.keySecret.name is required with shards > 1"))
}
