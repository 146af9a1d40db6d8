/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The alerts and the dashboard the chart ships name only metrics the
// operator exports, and Prometheus' own rule parser accepts the rules.

func TestChartPrometheusRuleIsAValidRuleFile(t *testing.T) {
	g := NewWithT(t)
	g.Expect(renderChart(t).kind("PrometheusRule")).To(BeEmpty(), "off by default")

	m := renderChart(t, "prometheusRule.enabled=true", "prometheusRule.labels.release=kube-prometheus-stack")
	rule := m.one(t, "PrometheusRule", "tether")
	g.Expect(rule.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(rule.GetNamespace()).To(Equal("tether-system"))
	g.Expect(rule.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))

	spec, err := yaml.Marshal(rule.Object["spec"])
	g.Expect(err).NotTo(HaveOccurred())
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.Default())
	g.Expect(errs).To(BeEmpty(), "the Prometheus rule parser refuses the rules")
	exported := exportedMetrics(t)
	var alerts []string
	for _, group := range groups.Groups {
		for _, r := range group.Rules {
			alerts = append(alerts, r.Alert)
			g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
			expectExportedMetrics(t, exported, r.Alert, r.Expr)
		}
	}
	g.Expect(alerts).To(ContainElements("TetherCancelsFailing", "TetherLeaseRenewalsFailing", "TetherRenewalsLate", "TetherBudgetExhausted"))

	// The file shipped in the chart is the rule file users load without
	// the Prometheus Operator, and the template passes it on untouched
	// (the alerts' {{ $labels }} are not Helm's).
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "monitoring", "alerts.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	_, errs = rulefmt.Parse(raw, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.Default())
	g.Expect(errs).To(BeEmpty())
	g.Expect(string(spec)).To(ContainSubstring("{{ $labels.agent }}"))
}

func TestChartGrafanaDashboardNamesExportedMetrics(t *testing.T) {
	g := NewWithT(t)
	g.Expect(renderChart(t).named("ConfigMap", "tether-dashboard")).To(BeEmpty(), "off by default")

	m := renderChart(t, "grafanaDashboard.enabled=true", "grafanaDashboard.namespace=monitoring", "grafanaDashboard.annotations.grafana_folder=tether")
	cm := decode[corev1.ConfigMap](t, m.one(t, "ConfigMap", "tether-dashboard"))
	g.Expect(cm.Namespace).To(Equal("monitoring"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"), "the label Grafana's sidecar looks for")
	g.Expect(cm.Annotations).To(HaveKeyWithValue("grafana_folder", "tether"))

	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr     string `json:"expr"`
				Exemplar bool   `json:"exemplar"`
			} `json:"targets"`
		} `json:"panels"`
	}
	g.Expect(json.Unmarshal([]byte(cm.Data["tether.json"]), &dash)).To(Succeed())
	g.Expect(dash.UID).NotTo(BeEmpty())

	exported := exportedMetrics(t)
	var titles []string
	exprs := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		titles = append(titles, p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), p.Title)
		for _, target := range p.Targets {
			expectExportedMetrics(t, exported, p.Title, grafanaToPromQL(target.Expr))
			exprs++
		}
	}
	g.Expect(titles).To(ContainElements("Delegations by phase", "Pending by reason", "Calls per Agent",
		"Call latency per Agent (p50, p99)", "Pool queue depth per Agent", "Renewal lateness per Agent (p99)", "Budget burn per root"))
	g.Expect(exprs).To(BeNumerically(">=", len(titles)))
	// label_values(metric, label) in the variables names metrics too.
	for _, v := range dash.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			expectExportedMetrics(t, exported, "variable "+v.Name, m[1])
		}
	}
}

var labelValues = regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`)

// grafanaToPromQL replaces Grafana's interval variables, which are not
// PromQL, with a duration. Variables inside label matchers ("$agent") are
// strings to PromQL and stay.
func grafanaToPromQL(expr string) string {
	return strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h").Replace(expr)
}

// expectExportedMetrics parses one expression and checks that each metric
// it selects is exported.
func expectExportedMetrics(t *testing.T, exported map[string]bool, where, expr string) {
	t.Helper()
	g := NewWithT(t)
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	g.Expect(err).NotTo(HaveOccurred(), "%s: %s", where, expr)
	selected := 0
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			selected++
			g.Expect(exported).To(HaveKey(vs.Name), "%s selects %q, which the operator does not export", where, vs.Name)
		}
		return nil
	})
	g.Expect(selected).To(BeNumerically(">", 0), "%s: %s selects no metric", where, expr)
}

// exportedMetrics are the series names the operator exports: tether's own,
// read from the metrics.go files that define them (a histogram as its
// _bucket, _sum and _count series), and the controller-runtime series the
// rules use (registered by controller-runtime for every controller).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "internal", "*", "metrics.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no internal/*/metrics.go: %v", err)
	}
	names := regexp.MustCompile(`(Histogram)?(?:Opts\{\s*Name:\s*|NewDesc\()"(tether_\w+)"`)
	out := map[string]bool{
		"controller_runtime_reconcile_errors_total": true,
		"controller_runtime_reconcile_total":        true,
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range names.FindAllStringSubmatch(string(src), -1) {
			if m[1] == "Histogram" {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					out[m[2]+suffix] = true
				}
				continue
			}
			out[m[2]] = true
		}
	}
	for _, want := range []string{"tether_delegations", "tether_a2a_request_duration_seconds_bucket", "tether_root_budget_spent", "tether_build_info"} {
		if !out[want] {
			t.Fatalf("reading the metric names from the sources found no %s: %v", want, out)
		}
	}
	return out
}

func TestChartTracingSetsTheOTELEnvironment(t *testing.T) {
	g := NewWithT(t)
	// otelEnv is the container's OTEL_* environment; the chart sets other
	// variables too (GOMEMLIMIT, the pod's name and addresses).
	otelEnv := func(d *appsv1.Deployment) map[string]string {
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if strings.HasPrefix(e.Name, "OTEL_") {
				env[e.Name] = e.Value
			}
		}
		return env
	}
	d := decode[appsv1.Deployment](t, renderChart(t).one(t, "Deployment", "tether"))
	g.Expect(otelEnv(d)).To(BeEmpty(), "off by default")

	d = decode[appsv1.Deployment](t, renderChart(t, "tracing.enabled=true", "tracing.endpoint=http://otel-collector.observability:4317",
		"tracing.sampler=parentbased_traceidratio", "tracing.samplerArg=0.1").one(t, "Deployment", "tether"))
	g.Expect(otelEnv(d)).To(Equal(map[string]string{
		"OTEL_TRACES_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel-collector.observability:4317",
		"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false",
		"OTEL_SERVICE_NAME":                  "tether",
		"OTEL_TRACES_SAMPLER":                "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":            "0.1",
	}))
	out, err := runHelm(t, "template", "tether", chartDir, "--set", "tracing.enabled=true")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("tracing.endpoint is required"))
}
