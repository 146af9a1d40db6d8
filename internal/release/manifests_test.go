/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const root = "../.."

var digest = "sha256:" + strings.Repeat("ab", 32)

func TestInstallYAMLPinsTheImageByTagAndDigest(t *testing.T) {
	g := NewWithT(t)
	m, err := Render(root, Image{Tag: "1.2.3", Digest: digest})
	g.Expect(err).NotTo(HaveOccurred())
	objs := decodeAll(t, m.Install)

	d := operatorDeployment(t, objs)
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/tether-dev/tether:1.2.3@" + digest))
	// The chart's defaults: loopback refused, secure metrics, leader election.
	g.Expect(c.Args).To(ContainElements("--leader-elect", "--metrics-bind-address=:8443", "--agent-deny-cidrs=127.0.0.0/8,::1/128"))
	g.Expect(*d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())

	// Every kind's CRD, as generated into config/crd/bases.
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(bases)).To(BeNumerically(">=", 4))
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "Namespace" && o.GetNamespace() != "" {
			g.Expect(o.GetNamespace()).To(Equal("tether-system"), "%s %s", o.GetKind(), o.GetName())
		}
		g.Expect(o.GetName()).NotTo(ContainSubstring("controller:latest"))
	}
	g.Expect(kinds).To(HaveKeyWithValue("CustomResourceDefinition", len(bases)))
	g.Expect(kinds).To(HaveKeyWithValue("Namespace", 1))
	g.Expect(kinds).To(HaveKey("ClusterRoleBinding"))
	g.Expect(kinds).To(HaveKey("Service"))

	crds := decodeAll(t, m.CRDs)
	g.Expect(crds).To(HaveLen(len(bases)))
	for _, o := range crds {
		g.Expect(o.GetKind()).To(Equal("CustomResourceDefinition"))
	}

	// A snapshot has no pushed image: tag only. A digest must be one.
	m, err = Render(root, Image{Tag: "1.2.3"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(operatorDeployment(t, decodeAll(t, m.Install)).Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/tether-dev/tether:1.2.3"))
	_, err = Render(root, Image{Tag: "1.2.3", Digest: "latest"})
	g.Expect(err).To(MatchError(ContainSubstring("is not sha256")))
	_, err = Render(root, Image{})
	g.Expect(err).To(HaveOccurred())
}

// kubectl apply -k config/default installs the chart's appVersion.
func TestConfigDefaultRunsTheChartsAppVersion(t *testing.T) {
	g := NewWithT(t)
	out, err := Build(filepath.Join(root, "config", "default"))
	g.Expect(err).NotTo(HaveOccurred())
	chart := readYAML(t, filepath.Join(root, "charts", "tether", "Chart.yaml"))
	image := operatorDeployment(t, decodeAll(t, out)).Spec.Template.Spec.Containers[0].Image
	g.Expect(image).To(Equal(OperatorImage + ":" + chart["appVersion"].(string)))
	g.Expect(chart).To(HaveKeyWithValue("kubeVersion", ">=1.25.0-0"))
}

// install.yaml carries the chart's ValidatingAdmissionPolicies (quota
// limits, the requester), named as a release named tether names them and
// cluster-scoped; the MutatingAdmissionPolicy, which needs Kubernetes 1.36,
// is left to config/admission/mutating.
func TestInstallYAMLCarriesTheValidatingAdmissionPolicies(t *testing.T) {
	g := NewWithT(t)
	m, err := Render(root, Image{Tag: "1.2.3"})
	g.Expect(err).NotTo(HaveOccurred())
	policies := map[string]string{}
	for _, o := range decodeAll(t, m.Install) {
		if o.GetAPIVersion() == "admissionregistration.k8s.io/v1" {
			g.Expect(o.GetNamespace()).To(BeEmpty(), "%s %s is cluster-scoped", o.GetKind(), o.GetName())
			policies[o.GetKind()+"/"+o.GetName()], _, _ = unstructured.NestedString(o.Object, "spec", "policyName")
		}
	}
	g.Expect(policies).To(Equal(map[string]string{
		"ValidatingAdmissionPolicy/tether-quota-limits":        "",
		"ValidatingAdmissionPolicyBinding/tether-quota-limits": "tether-quota-limits",
		"ValidatingAdmissionPolicy/tether-requester":           "",
		"ValidatingAdmissionPolicyBinding/tether-requester":    "tether-requester",
	}))

	out, err := Build(filepath.Join(root, "config", "admission", "mutating"))
	g.Expect(err).NotTo(HaveOccurred())
	mutating := decodeAll(t, out)
	kinds := make([]string, 0, len(mutating))
	for _, o := range mutating {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	g.Expect(kinds).To(ConsistOf("MutatingAdmissionPolicy/tether-requester", "MutatingAdmissionPolicyBinding/tether-requester"))
}

// The release recipe builds what the project promises. `goreleaser check`
// (make release-check, make release-snapshot) validates it against the
// tool's own schema; this holds its shape on every `make test`.
func TestReleaseRecipe(t *testing.T) {
	g := NewWithT(t)
	cfg := readYAML(t, filepath.Join(root, ".goreleaser.yaml"))
	builds := map[string]map[string]any{}
	for _, b := range list(cfg["builds"]) {
		builds[b["id"].(string)] = b
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile.release"))
	g.Expect(err).NotTo(HaveOccurred())

	images := map[string]bool{}
	for _, d := range list(cfg["dockers_v2"]) {
		id := d["id"].(string)
		g.Expect(d["platforms"]).To(ConsistOf("linux/amd64", "linux/arm64"), id)
		g.Expect(d["sbom"]).To(BeTrue(), id)
		g.Expect(d["dockerfile"]).To(Equal("Dockerfile.release"), id)
		for _, b := range d["ids"].([]any) {
			build, ok := builds[b.(string)]
			g.Expect(ok).To(BeTrue(), "%s names build %s", id, b)
			g.Expect(build["goarch"]).To(ContainElements("amd64", "arm64"), "the images reuse the build's binaries")
		}
		target := strings.TrimPrefix(d["flags"].([]any)[0].(string), "--target=")
		g.Expect(string(dockerfile)).To(MatchRegexp(`(?m)^FROM \S+ AS `+regexp.QuoteMeta(target)+`$`), id)
		for _, img := range d["images"].([]any) {
			images[img.(string)] = true
		}
	}
	g.Expect(images).To(HaveKey("{{ .Env.REGISTRY }}/tether"))
	g.Expect(images).To(HaveKey("{{ .Env.REGISTRY }}/tether-sample-worker"))
	g.Expect(images).To(HaveKey("{{ .Env.REGISTRY }}/tether-sample-orchestrator"))
	operator := list(cfg["dockers_v2"])[0]
	hook := operator["hooks"].(map[string]any)["post"].([]any)[0].(map[string]any)["cmd"].(string)
	g.Expect(hook).To(And(ContainSubstring("./hack/release/manifests"), ContainSubstring("--digest {{ .Digest }}")),
		"install.yaml pins the digest the operator image was pushed with")

	g.Expect(cfg["snapshot"].(map[string]any)["version_template"]).NotTo(ContainSubstring("+"),
		"a snapshot's version is its images' tag, and a tag allows no '+'")

	g.Expect(list(cfg["sboms"])).To(ContainElement(HaveKeyWithValue("artifacts", "archive")))
	for _, key := range []string{"signs", "docker_signs"} {
		for _, s := range list(cfg[key]) {
			g.Expect(s["cmd"]).To(Equal("cosign"), key)
			args := strings.Join(toStrings(s["args"]), " ")
			g.Expect(args).NotTo(ContainSubstring("--key"), "%s: keyless, the CI identity signs", key)
			g.Expect(args).To(ContainSubstring("--yes"), key)
		}
	}
	g.Expect(list(cfg["docker_signs"])[0]["artifacts"]).To(Equal("manifests"))

	krew := list(cfg["krews"])[0]
	g.Expect(krew["ids"]).To(ConsistOf("kubectl-tether"))
	var archive map[string]any
	for _, a := range list(cfg["archives"]) {
		if a["id"] == "kubectl-tether" {
			archive = a
		}
	}
	g.Expect(archive).NotTo(BeNil())
	g.Expect(krew["url_template"]).To(HaveSuffix("/{{ .ArtifactName }}"))

	files := list(cfg["release"].(map[string]any)["extra_files"])
	extra := make([]string, 0, len(files))
	for _, f := range files {
		extra = append(extra, f["glob"].(string))
	}
	g.Expect(extra).To(ConsistOf("dist/install.yaml", "dist/tether-crds.yaml"))

	bin, err := filepath.Abs(filepath.Join(root, "bin", "goreleaser"))
	g.Expect(err).NotTo(HaveOccurred())
	if _, err := os.Stat(bin); err == nil {
		cmd := exec.Command(bin, "check")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "goreleaser check:\n%s", out)
	} else {
		t.Log("bin/goreleaser is not installed (make goreleaser): its own schema check is left to make release-check")
	}
}

func operatorDeployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == "tether-controller-manager" {
			raw, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			d := &appsv1.Deployment{}
			if err := yaml.Unmarshal(raw, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no Deployment tether-controller-manager")
	return nil
}

func decodeAll(t *testing.T, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("invalid YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func list(v any) []map[string]any {
	var out []map[string]any
	items, _ := v.([]any)
	for _, i := range items {
		if m, ok := i.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func toStrings(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, i := range items {
		out = append(out, i.(string))
	}
	return slices.Clip(out)
}
