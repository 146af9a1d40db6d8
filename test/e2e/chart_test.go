/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tether-dev/tether/config/argocd"
)

// These tests render the chart without a cluster; `go test -short` runs them
// too when helm is installed.

func TestChartLints(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "--set", "watchNamespaces={team-a,team-b}")
}

// The operator may read a Secret it is pointed at, never list or watch them:
// the RBAC generated from the markers must keep it that way.
func TestOperatorOnlyGetsSecrets(t *testing.T) {
	for _, rule := range markerRules(t) {
		if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "secrets") {
			NewWithT(t).Expect(rule.Verbs).To(Equal([]string{"get"}))
		}
	}
}

func TestChartDefaultsGrantTheMarkerRulesClusterWide(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t)
	role := decode[rbacv1.ClusterRole](t, m.one(t, "ClusterRole", "tether-manager"))
	g.Expect(role.Rules).To(Equal(markerRules(t)))
	binding := decode[rbacv1.ClusterRoleBinding](t, m.one(t, "ClusterRoleBinding", "tether-manager"))
	g.Expect(binding.RoleRef.Name).To(Equal("tether-manager"))
	g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "tether", Namespace: "tether-system"}))

	election := decode[rbacv1.Role](t, m.one(t, "Role", "tether-leader-election"))
	g.Expect(election.Namespace).To(Equal("tether-system"))
	g.Expect(election.Rules).To(ContainElement(HaveField("Resources", ConsistOf("leases"))))
	expectSecretsGetOnly(t, m)
}

// The operator may request tokens of its own ServiceAccount, and of no
// other (workload identity), and learns its name from the pod.
func TestChartGrantsTokensOfItsOwnServiceAccountOnly(t *testing.T) {
	g := NewWithT(t)
	for sa, set := range map[string][]string{"tether": nil, "custom": {"serviceAccount.name=custom"}} {
		m := renderChart(t, set...)
		role := decode[rbacv1.Role](t, m.one(t, "Role", "tether-serviceaccount-token"))
		g.Expect(role.Namespace).To(Equal("tether-system"))
		g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"},
			ResourceNames: []string{sa}, Verbs: []string{"create"}}}), sa)
		binding := decode[rbacv1.RoleBinding](t, m.one(t, "RoleBinding", "tether-serviceaccount-token"))
		g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: "tether-system"}))
		pod := decode[appsv1.Deployment](t, m.one(t, "Deployment", "tether")).Spec.Template.Spec
		g.Expect(pod.ServiceAccountName).To(Equal(sa))
		g.Expect(pod.Containers[0].Env).To(ContainElements(
			And(HaveField("Name", "POD_NAMESPACE"), HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace")),
			And(HaveField("Name", "SERVICE_ACCOUNT_NAME"), HaveField("ValueFrom.FieldRef.FieldPath", "spec.serviceAccountName"))))
	}
}

func TestChartWatchNamespacesGrantsRolesOnly(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t, "watchNamespaces={team-a,team-b}")
	for _, ns := range []string{"team-a", "team-b"} {
		role := decode[rbacv1.Role](t, m.oneIn(t, "Role", ns, "tether-manager"))
		g.Expect(role.Rules).To(Equal(markerRules(t)))
		binding := decode[rbacv1.RoleBinding](t, m.oneIn(t, "RoleBinding", ns, "tether-manager"))
		g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "tether", Namespace: "tether-system"}))
	}
	g.Expect(m.named("ClusterRole", "tether-manager")).To(BeEmpty())
	g.Expect(m.named("ClusterRoleBinding", "tether-manager")).To(BeEmpty())
	// What the ServiceAccount is still bound to cluster-wide is metrics
	// authentication only: nothing about Agents, Delegations or Secrets.
	for _, doc := range m.kind("ClusterRoleBinding") {
		binding := decode[rbacv1.ClusterRoleBinding](t, doc)
		role := decode[rbacv1.ClusterRole](t, m.one(t, "ClusterRole", binding.RoleRef.Name))
		for _, rule := range role.Rules {
			g.Expect(rule.APIGroups).NotTo(ContainElement(BeElementOf("", "delegation.tether.dev")), "ClusterRole %s", role.Name)
		}
	}
	g.Expect(managerArgs(t, m)).To(ContainElement("--watch-namespaces=team-a,team-b"))
	// A comma-separated string, as --set passes it, means the same.
	g.Expect(managerArgs(t, renderChart(t, `watchNamespaces=team-a\,team-b`))).To(ContainElement("--watch-namespaces=team-a,team-b"))
}

func TestChartDeploymentIsRestrictedAndProbed(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t)
	d := decode[appsv1.Deployment](t, m.one(t, "Deployment", "tether"))
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("tether"))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	c := pod.Containers[0]
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(c.Resources.Limits).NotTo(BeEmpty())
	g.Expect(c.Resources.Requests).NotTo(BeEmpty())

	g.Expect(c.Args).To(ContainElements("--health-probe-bind-address=:8081", "--leader-elect",
		"--leader-election-namespace=tether-system", "--metrics-bind-address=:8443", "--zap-log-level=info",
		"--agent-deny-cidrs=127.0.0.0/8,::1/128"), "loopback is denied by default")
	// --agent-deny-own-addresses learns the pod's and the node's addresses
	// from the downward API.
	g.Expect(c.Env).To(ContainElements(
		HaveField("ValueFrom.FieldRef.FieldPath", "status.podIPs"), HaveField("ValueFrom.FieldRef.FieldPath", "status.hostIP")))
	g.Expect(managerArgs(t, renderChart(t, "networkPolicy.egress.apiServerCIDRs={10.0.0.5/32}"))).
		To(ContainElement("--agent-deny-cidrs=127.0.0.0/8,::1/128,10.0.0.5/32"), "the API server's addresses are denied to agents")
	g.Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port.String()).To(Equal("health"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port.String()).To(Equal("health"))

	// Every operator flag has a value, and values reach the command line.
	args := managerArgs(t, renderChart(t, "maxConcurrentReconciles=8", "kubeApiQps=12.5", "kubeApiBurst=30",
		"cancelTimeout=45s", "sendTimeout=1m", "maxDepth=4", "agentDenyCIDRs={10.0.0.0/8,169.254.0.0/16}",
		"agentAllowCIDRs={10.1.0.0/16}", "maxResponseBytes=4194304", "resultTextLimit=1024", "logLevel=debug", "leaderElection.enabled=false", "metrics.enabled=false"))
	g.Expect(args).To(ContainElements("--max-concurrent-reconciles=8", "--kube-api-qps=12.5", "--kube-api-burst=30",
		"--cancel-timeout=45s", "--send-timeout=1m", "--max-depth=4", "--agent-deny-cidrs=10.0.0.0/8,169.254.0.0/16",
		"--agent-allow-cidrs=10.1.0.0/16", "--max-response-bytes=4194304", "--result-text-limit=1024", "--zap-log-level=debug", "--metrics-bind-address=0"))
	g.Expect(args).NotTo(ContainElement("--leader-elect"))
	g.Expect(strings.Join(args, " ")).NotTo(ContainSubstring("--push-listen"), "push is off by default")
}

func TestChartCRDsAreConfigsAndKept(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t)
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		want := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(raw, &want.Object)).To(Succeed())
		got := m.one(t, "CustomResourceDefinition", want.GetName())
		g.Expect(got.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
		g.Expect(got.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		// Apart from what the chart adds to metadata, the CRD is config's.
		got = got.DeepCopy()
		got.SetLabels(nil)
		annotations := got.GetAnnotations()
		delete(annotations, "helm.sh/resource-policy")
		got.SetAnnotations(annotations)
		g.Expect(got.Object).To(Equal(want.Object), "%s differs from %s: run make chart", want.GetName(), f)
	}
	g.Expect(renderChart(t, "crds.keep=false").one(t, "CustomResourceDefinition", "delegations.delegation.tether.dev").GetAnnotations()).
		NotTo(HaveKey("helm.sh/resource-policy"))
	g.Expect(renderChart(t, "crds.install=false").kind("CustomResourceDefinition")).To(BeEmpty())
}

func TestChartOptionalParts(t *testing.T) {
	g := NewWithT(t)
	m := renderChart(t)
	g.Expect(m.kind("ServiceMonitor")).To(BeEmpty())
	g.Expect(m.named("Service", "tether-push")).To(BeEmpty())
	g.Expect(m.named("ConfigMap", "tether-argocd-health")).To(BeEmpty())
	metrics := decode[corev1.Service](t, m.one(t, "Service", "tether-metrics"))
	g.Expect(metrics.Spec.Ports).To(ConsistOf(HaveField("Port", int32(8443))))

	m = renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.tls.secretName=metrics-cert", "push.enabled=true", "push.port=9443",
		"argocd.healthChecks.enabled=true", "networkPolicy.enabled=true")
	m.one(t, "ServiceMonitor", "tether-metrics")
	m.one(t, "NetworkPolicy", "tether")
	push := decode[corev1.Service](t, m.one(t, "Service", "tether-push"))
	g.Expect(push.Spec.Ports).To(ConsistOf(HaveField("Port", int32(9443))))
	g.Expect(managerArgs(t, m)).To(ContainElements("--push-listen=:9443", "--push-url=http://tether-push.tether-system.svc:9443"))

	health := decode[corev1.ConfigMap](t, m.one(t, "ConfigMap", "tether-argocd-health"))
	g.Expect(health.Data).To(Equal(argocd.HealthChecks()), "the chart must ship config/argocd's health checks")

	// A key from a Secret keeps notification tokens valid across restarts.
	m = renderChart(t, "push.enabled=true", "push.url=https://tether.example.com/push", "push.keySecret.name=push-key")
	d := decode[appsv1.Deployment](t, m.one(t, "Deployment", "tether"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
		"--push-url=https://tether.example.com/push", "--push-key-file=/etc/tether/push/key"))
	g.Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ConsistOf(HaveField("MountPath", "/etc/tether/push")))
	g.Expect(d.Spec.Template.Spec.Volumes).To(ConsistOf(HaveField("Secret.SecretName", "push-key")))
}

// markerRules are the operator's rules generated from +kubebuilder:rbac.
func markerRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	return role.Rules
}

// expectSecretsGetOnly checks every rule the chart grants anyone.
func expectSecretsGetOnly(t *testing.T, m manifests) {
	t.Helper()
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, doc := range m.kind(kind) {
			role := decode[rbacv1.ClusterRole](t, doc)
			for _, rule := range role.Rules {
				if slices.Contains(rule.APIGroups, "") && (slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*")) {
					NewWithT(t).Expect(rule.Verbs).To(Equal([]string{"get"}), "%s %s", kind, role.Name)
				}
			}
		}
	}
}

// manifests is a rendered chart.
type manifests []*unstructured.Unstructured

var documentSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// renderChart runs helm template as release "tether" in "tether-system".
func renderChart(t *testing.T, set ...string) manifests {
	t.Helper()
	args := make([]string, 0, 2*len(set))
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return renderChartWith(t, args...)
}

// renderChartWith is renderChart with helm template's own arguments.
func renderChartWith(t *testing.T, extra ...string) manifests {
	t.Helper()
	args := append([]string{"template", "tether", chartDir, "--namespace", "tether-system"}, extra...)
	var m manifests
	for _, doc := range documentSeparator.Split(helm(t, args...), -1) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("helm template printed invalid YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			m = append(m, u)
		}
	}
	return m
}

func (m manifests) kind(kind string) manifests {
	var out manifests
	for _, u := range m {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

func (m manifests) named(kind, name string) manifests {
	var out manifests
	for _, u := range m.kind(kind) {
		if u.GetName() == name {
			out = append(out, u)
		}
	}
	return out
}

func (m manifests) one(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	found := m.named(kind, name)
	if len(found) != 1 {
		t.Fatalf("the chart renders %d %s named %s, want 1", len(found), kind, name)
	}
	return found[0]
}

func (m manifests) oneIn(t *testing.T, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range m.named(kind, name) {
		if u.GetNamespace() == namespace {
			return u
		}
	}
	t.Fatalf("the chart renders no %s %s/%s", kind, namespace, name)
	return nil
}

func managerArgs(t *testing.T, m manifests) []string {
	t.Helper()
	return decode[appsv1.Deployment](t, m.one(t, "Deployment", "tether")).Spec.Template.Spec.Containers[0].Args
}

func decode[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	raw, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := yaml.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}
