/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// values.schema.json refuses wrong values before anything renders.
func TestChartSchemaRefusesWrongValues(t *testing.T) {
	for set, want := range map[string]string{
		"replicas=two":                          "at '/replicas': got string, want integer",
		"agentDenyCIDRs=10.0.0.0/8":             "at '/agentDenyCIDRs': got string, want array",
		"agentAllowCIDRs={not-a-cidr}":          "at '/agentAllowCIDRs/0'",
		"image.pullPolicy=Sometimes":            "at '/image/pullPolicy': value must be one of",
		"image.digest=latest":                   "at '/image/digest'",
		"metrics.port=70000":                    "at '/metrics/port': maximum",
		"secrets.clusterWide=maybe":             "at '/secrets/clusterWide': got string, want boolean",
		"replica=2":                             "additional properties 'replica' not allowed",
		"cancelTimeout=soon":                    "at '/cancelTimeout'",
		"logLevel=loud":                         "at '/logLevel'",
		"push.service.type=External":            "at '/push/service/type'",
		"extraArgs={zap-log-level=debug}":       "at '/extraArgs/0'",
		"metrics.serviceMonitor.tlsConfig=null": "additional properties 'tlsConfig' not allowed",
		// Every replica must check push tokens with the same key.
		"replicas=2,push.enabled=true": "at '/push/keySecret/name': minLength",
	} {
		t.Run(set, func(t *testing.T) {
			out, err := runHelm(t, "template", "tether", chartDir, "--namespace", "tether-system", "--set", set)
			g := NewWithT(t)
			g.Expect(err).To(HaveOccurred(), "rendered:\n%s", out)
			g.Expect(out).To(ContainSubstring("values don't meet the specifications of the schema"))
			g.Expect(out).To(ContainSubstring(want))
		})
	}
	out, err := runHelm(t, "lint", chartDir)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), out)
}

func TestChartPodDisruptionBudgetOnlyWithAStandby(t *testing.T) {
	g := NewWithT(t)
	g.Expect(renderChart(t).kind("PodDisruptionBudget")).To(BeEmpty(), "one replica: a budget would block drains")
	pdb := decode[policyv1.PodDisruptionBudget](t, renderChart(t, "replicas=2").one(t, "PodDisruptionBudget", "tether"))
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/component", "operator"))
}

func TestChartImageByDigest(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("ab", 32)
	d := decode[appsv1.Deployment](t, renderChart(t, "image.tag=v9", "image.digest="+digest).one(t, "Deployment", "tether"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/tether-dev/tether@" + digest))
	d = decode[appsv1.Deployment](t, renderChart(t, "image.tag=v9").one(t, "Deployment", "tether"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/tether-dev/tether:v9"))
}

func TestChartEgressNetworkPolicy(t *testing.T) {
	g := NewWithT(t)
	np := decode[networkingv1.NetworkPolicy](t, renderChart(t, "networkPolicy.enabled=true").one(t, "NetworkPolicy", "tether"))
	g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress), "egress is left alone by default")

	np = decode[networkingv1.NetworkPolicy](t, renderChart(t, "networkPolicy.enabled=true", "networkPolicy.egress.enabled=true",
		"networkPolicy.egress.apiServerCIDRs={10.96.0.1/32}", "networkPolicy.egress.agents[0].to[0].ipBlock.cidr=10.20.0.0/16",
		"networkPolicy.egress.agents[0].ports[0].port=443").one(t, "NetworkPolicy", "tether"))
	g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	g.Expect(np.Spec.Egress).To(HaveLen(3), "DNS, the API server and the agents")
	g.Expect(np.Spec.Egress[1].To).To(ConsistOf(HaveField("IPBlock.CIDR", "10.96.0.1/32")))
	g.Expect(np.Spec.Egress[2].To).To(ConsistOf(HaveField("IPBlock.CIDR", "10.20.0.0/16")))
}

// The ServiceMonitor verifies the operator's certificate and authenticates
// with a dedicated ServiceAccount's token, never bearerTokenFile.
func TestChartServiceMonitorVerifiesTLS(t *testing.T) {
	g := NewWithT(t)
	out, err := runHelm(t, "template", "tether", chartDir, "--set", "metrics.serviceMonitor.enabled=true")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("set metrics.tls.secretName"))

	m := renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.tls.secretName=metrics-cert")
	sm := m.one(t, "ServiceMonitor", "tether-metrics")
	endpoint := sm.Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	g.Expect(endpoint).NotTo(HaveKey("bearerTokenFile"))
	g.Expect(endpoint["authorization"]).To(Equal(map[string]any{"type": "Bearer",
		"credentials": map[string]any{"name": "tether-metrics-scraper-token", "key": "token"}}))
	g.Expect(endpoint["tlsConfig"]).To(Equal(map[string]any{"serverName": "tether-metrics.tether-system.svc",
		"ca": map[string]any{"secret": map[string]any{"name": "metrics-cert", "key": "ca.crt"}}}))
	token := m.one(t, "Secret", "tether-metrics-scraper-token")
	g.Expect(token.Object["type"]).To(Equal("kubernetes.io/service-account-token"))
	g.Expect(token.GetAnnotations()).To(HaveKeyWithValue("kubernetes.io/service-account.name", "tether-metrics-scraper"))
	binding := decode[rbacv1.ClusterRoleBinding](t, m.one(t, "ClusterRoleBinding", "tether-metrics-scraper"))
	g.Expect(binding.RoleRef.Name).To(Equal("tether-metrics-reader"))
	d := decode[appsv1.Deployment](t, m.one(t, "Deployment", "tether"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-cert-dir=/etc/tether/metrics-tls"))
	g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "metrics-cert")))

	sm = renderChart(t, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.insecureSkipVerify=true").
		one(t, "ServiceMonitor", "tether-metrics")
	endpoint = sm.Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	g.Expect(endpoint["tlsConfig"]).To(Equal(map[string]any{"insecureSkipVerify": true}), "only when asked for")
}

// secrets.clusterWide=false: no rule the chart grants the operator names
// Secrets; the ClusterRole namespace owners bind is provided.
func TestChartWithoutClusterWideSecrets(t *testing.T) {
	g := NewWithT(t)
	for _, set := range [][]string{{"secrets.clusterWide=false"}, {"secrets.clusterWide=false", "watchNamespaces={team-a}"}} {
		m := renderChart(t, set...)
		for _, kind := range []string{"Role", "ClusterRole"} {
			for _, doc := range m.kind(kind) {
				if doc.GetName() == "tether-agent-credentials-reader" {
					continue
				}
				expectNoSecretRule(t, g, doc)
			}
		}
		reader := decode[rbacv1.ClusterRole](t, m.one(t, "ClusterRole", "tether-agent-credentials-reader"))
		g.Expect(reader.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}))
		g.Expect(m.kind("RoleBinding").named("RoleBinding", "tether-agent-credentials-reader")).To(BeEmpty(), "the chart binds it nowhere")
	}
	g.Expect(renderChart(t).named("ClusterRole", "tether-agent-credentials-reader")).To(BeEmpty())
}

func expectNoSecretRule(t *testing.T, g Gomega, doc *unstructured.Unstructured) {
	t.Helper()
	role := decode[rbacv1.ClusterRole](t, doc)
	for _, rule := range role.Rules {
		g.Expect(rule.Resources).NotTo(ContainElement("secrets"), "%s %s", doc.GetKind(), doc.GetName())
	}
}
