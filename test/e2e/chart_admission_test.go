/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The chart ships config/admission's policies, each where the cluster's
// Kubernetes serves its kind, behind its admissionPolicies value.
func TestChartAdmissionPolicies(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "admission", "*.*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	mutating, err := filepath.Glob(filepath.Join(repoRoot, "config", "admission", "mutating", "*.*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	files = append(files, mutating...)
	g.Expect(files).To(HaveLen(6), "three policies and their bindings")

	m := renderChartWith(t, "--kube-version", "1.37.0")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		want := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(raw, &want.Object)).To(Succeed())
		got := m.one(t, want.GetKind(), want.GetName()).DeepCopy()
		g.Expect(got.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		got.SetLabels(nil)
		g.Expect(got.Object).To(Equal(want.Object), "%s differs from %s: run make chart", want.GetName(), f)
	}

	kinds := func(m manifests) map[string]int {
		out := map[string]int{}
		for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
			"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
			out[kind] = len(m.kind(kind))
		}
		return out
	}
	g.Expect(kinds(m)).To(Equal(map[string]int{"ValidatingAdmissionPolicy": 2, "ValidatingAdmissionPolicyBinding": 2,
		"MutatingAdmissionPolicy": 1, "MutatingAdmissionPolicyBinding": 1}))
	g.Expect(kinds(renderChartWith(t, "--kube-version", "1.30.0"))).To(Equal(map[string]int{"ValidatingAdmissionPolicy": 2,
		"ValidatingAdmissionPolicyBinding": 2, "MutatingAdmissionPolicy": 0, "MutatingAdmissionPolicyBinding": 0}))
	g.Expect(kinds(renderChartWith(t, "--kube-version", "1.29.0"))).To(Equal(map[string]int{"ValidatingAdmissionPolicy": 0,
		"ValidatingAdmissionPolicyBinding": 0, "MutatingAdmissionPolicy": 0, "MutatingAdmissionPolicyBinding": 0}))

	off := renderChartWith(t, "--kube-version", "1.37.0", "--set", "admissionPolicies.quotaLimits.enabled=false")
	g.Expect(off.named("ValidatingAdmissionPolicy", "tether-quota-limits")).To(BeEmpty())
	off.one(t, "ValidatingAdmissionPolicy", "tether-requester")
	off = renderChartWith(t, "--kube-version", "1.37.0", "--set", "admissionPolicies.requester.enabled=false")
	g.Expect(off.named("MutatingAdmissionPolicy", "tether-requester")).To(BeEmpty())
	g.Expect(off.named("ValidatingAdmissionPolicy", "tether-requester")).To(BeEmpty())
	off.one(t, "ValidatingAdmissionPolicyBinding", "tether-quota-limits")
}
