/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	tetherrelease "github.com/tether-dev/tether/internal/release"
)

// A release's install.yaml is accepted as it is by the API server: every
// object, applied server-side in dry run, its admission policies included;
// so is config/admission/mutating, applied beside it on Kubernetes 1.36 and
// later.
func TestInstallYAMLAppliesToTheAPIServer(t *testing.T) {
	requireCluster(t)
	g := NewWithT(t)
	m, err := tetherrelease.Render(repoRoot, tetherrelease.Image{Tag: "0.1.0", Digest: "sha256:" + strings.Repeat("0f", 32)})
	g.Expect(err).NotTo(HaveOccurred())
	objs := splitManifests(t, m.Install)
	g.Expect(objs.kind("Deployment")).To(HaveLen(1))
	g.Expect(objs.kind("ValidatingAdmissionPolicy")).To(HaveLen(2))
	g.Expect(objs.kind("ValidatingAdmissionPolicyBinding")).To(HaveLen(2))
	ensureNamespace(t, "tether-system")
	mutating, err := tetherrelease.Build(filepath.Join(repoRoot, "config", "admission", "mutating"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range append(objs, splitManifests(t, mutating)...) {
		dryRunApply(t, o)
	}
}

// The samples run on a Helm install with the chart's defaults:
// `kubectl apply -k config/samples` is accepted by the API server, and the
// Agents point at the samples' own Services, whose cluster IPs the chart's
// default egress policy lets the operator dial (loopback, which the
// samples used before, it refuses).
func TestSamplesRunOnAHelmInstallWithDefaults(t *testing.T) {
	requireCluster(t)
	g := NewWithT(t)
	ctx := context.Background()
	installChart(t, "tether-samples", "tether-e2e-samples-system-"+newRunID())

	out, err := tetherrelease.Build(filepath.Join(repoRoot, "config", "samples"))
	g.Expect(err).NotTo(HaveOccurred())
	objs := splitManifests(t, out)
	g.Expect(objs.kind("Deployment")).To(HaveLen(2))
	g.Expect(objs.kind("Agent")).To(HaveLen(2))
	g.Expect(objs.kind("Delegation")).NotTo(BeEmpty())

	ensureNamespace(t, "tether-samples")
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		dryRunApply(t, o)
		if o.GetKind() == "Service" {
			// Created for real: the API server allocates its cluster IP.
			svc := decode[corev1.Service](t, o)
			g.Expect(kube.Create(ctx, svc)).To(Succeed())
			services[svc.Name+"."+svc.Namespace+".svc"] = svc
		}
	}
	for _, d := range objs.kind("Deployment") {
		image := decodeDeploymentImage(t, d)
		g.Expect(image).To(MatchRegexp(`^ghcr\.io/tether-dev/tether-sample-(worker|orchestrator):[0-9]+\.[0-9]+\.[0-9]+$`),
			"a sample image the release publishes")
	}

	policy, err := a2a.NewHTTPClient(a2a.HTTPOptions{Timeout: time.Second, DenyCIDRs: chartDefaultDenyCIDRs(t)})
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs.kind("Agent") {
		agent := decode[v1alpha1.Agent](t, o)
		u, err := url.Parse(agent.Spec.URL)
		g.Expect(err).NotTo(HaveOccurred())
		svc, ok := services[u.Hostname()]
		g.Expect(ok).To(BeTrue(), "Agent %s points at %s, not at a Service of the samples", agent.Name, agent.Spec.URL)
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Port", BeNumerically("==", port(t, u)))), agent.Name)
		g.Expect(kube.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
		g.Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
		// Nothing listens at the cluster IP here (no kube-proxy); what
		// matters is that the dial was not refused by the policy.
		_, err = policy.Get("http://" + net.JoinHostPort(svc.Spec.ClusterIP, u.Port()) + "/.well-known/agent-card.json")
		g.Expect(errors.Is(err, a2a.ErrEgressDenied)).To(BeFalse(), "the chart's egress policy refuses %s: %v", svc.Spec.ClusterIP, err)
	}
	_, err = policy.Get("http://127.0.0.1:9101/.well-known/agent-card.json")
	g.Expect(errors.Is(err, a2a.ErrEgressDenied)).To(BeTrue(), "loopback stays refused: %v", err)
}

// chartDefaultDenyCIDRs are the --agent-deny-cidrs the chart passes by default.
func chartDefaultDenyCIDRs(t *testing.T) []*net.IPNet {
	t.Helper()
	var out []*net.IPNet
	for _, arg := range managerArgs(t, renderChart(t)) {
		list, ok := strings.CutPrefix(arg, "--agent-deny-cidrs=")
		if !ok {
			continue
		}
		for c := range strings.SplitSeq(list, ",") {
			_, n, err := net.ParseCIDR(c)
			if err != nil {
				t.Fatalf("the chart passes %s: %v", arg, err)
			}
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart passes no --agent-deny-cidrs")
	}
	return out
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

func decodeDeploymentImage(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("%s has %d containers", u.GetName(), len(containers))
	}
	image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	return image
}

func port(t *testing.T, u *url.URL) int {
	t.Helper()
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s names no port: %v", u, err)
	}
	return p
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
