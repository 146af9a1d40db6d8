/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tetherrelease "github.com/tether-dev/tether/internal/release"
)

// A release's install.yaml is accepted as it is by the API server: every
// object, applied server-side in dry run.
func TestInstallYAMLAppliesToTheAPIServer(t *testing.T) {
	requireCluster(t)
	g := NewWithT(t)
	m, err := tetherrelease.Render(repoRoot, tetherrelease.Image{Tag: "0.1.0", Digest: "sha256:" + strings.Repeat("0f", 32)})
	g.Expect(err).NotTo(HaveOccurred())
	objs := splitManifests(t, m.Install)
	g.Expect(objs.kind("Deployment")).To(HaveLen(1))
	ensureNamespace(t, "tether-system")
	for _, o := range objs {
		dryRunApply(t, o)
	}
}

// ensureNamespace creates a namespace unless it exists, and deletes it at the
// end of the test if it made it.
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err := kube.Create(context.Background(), ns)
	if apierrors.IsAlreadyExists(err) {
		return
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = kube.Delete(context.Background(), ns) })
}

func dryRunApply(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	err := kube.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
		client.FieldOwner("e2e-release"), client.ForceOwnership, client.DryRunAll)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "the API server refuses %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

func splitManifests(t *testing.T, raw []byte) manifests {
	t.Helper()
	var m manifests
	for _, doc := range documentSeparator.Split(string(raw), -1) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("invalid YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			m = append(m, u)
		}
	}
	return m
}

// Chart.yaml's kubeVersion is the oldest Kubernetes whose API server
// enforces the CRDs' validation rules by default.
func TestChartNamesItsMinimumKubernetes(t *testing.T) {
	g := NewWithT(t)
	out, err := runHelm(t, "template", "tether", chartDir, "--kube-version", "1.24.9")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("chart requires kubeVersion"))
	helm(t, "template", "tether", chartDir, "--kube-version", "1.25.0")
	helm(t, "template", "tether", chartDir, "--kube-version", "v1.30.4-eks-a737599")
}
