/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// helm runs the helm binary with its own home folders, so it neither reads
// nor writes the user's helm configuration, and fails the test on error.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(helmBin); err != nil {
		t.Skipf("helm is not installed at %s (make helm)", helmBin)
	}
	cmd := exec.Command(helmBin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"),
	)
	if testbed != nil {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+testbed.Kubeconfig())
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// release is one installed copy of the chart.
type release struct {
	name, namespace string
}

// installChart installs the chart into a new namespace and uninstalls it at
// the end of the test. The CRDs go with the first release only: a second
// release cannot own them, and they outlive every release (crds.keep).
func installChart(t *testing.T, name, namespace string, set ...string) release {
	t.Helper()
	args := []string{"install", name, chartDir, "--namespace", namespace, "--create-namespace"}
	withCRDs := !crdsInstalled(t)
	if !withCRDs {
		args = append(args, "--set", "crds.install=false")
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	t.Logf("helm %s", strings.Join(args, " "))
	helm(t, args...)
	waitForCRDs(t)
	if withCRDs {
		// So the garbage collector knows the new kinds now, not in 30 s.
		NewWithT(t).Expect(testbed.RestartControllerManager(context.Background())).To(Succeed())
	}
	r := release{name: name, namespace: namespace}
	t.Cleanup(func() {
		if out, err := runHelm(t, "uninstall", name, "--namespace", namespace); err != nil {
			t.Errorf("helm uninstall %s: %v\n%s", name, err, out)
		}
	})
	return r
}

func crdsInstalled(t *testing.T) bool {
	t.Helper()
	err := kube.Get(context.Background(), client.ObjectKey{Name: "delegations.delegation.tether.dev"}, &apiextensionsv1.CustomResourceDefinition{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// waitForCRDs waits until the API server serves the tether kinds.
func waitForCRDs(t *testing.T) {
	t.Helper()
	for _, name := range []string{"agents.delegation.tether.dev", "delegations.delegation.tether.dev"} {
		NewWithT(t).Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(kube.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed())
			g.Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established),
				HaveField("Status", apiextensionsv1.ConditionTrue),
			)), "CRD %s is not established", name)
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	// Established is not yet admitted: the chart's admission policies learn
	// a new kind from discovery a while later and refuse its objects with a
	// 503 until then. A server-side dry run goes through them.
	probe := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "admission-probe"},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "probe"}, Message: &v1alpha1.Message{Text: "probe"}}}
	NewWithT(t).Eventually(func() error {
		return kube.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
	}).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "a Delegation is admitted")
}
