/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

// leaseName is the operator's leader election Lease (cmd/main.go).
const leaseName = "tether-operator.delegation.tether.dev"

// startOperator runs the operator binary with the command line of the
// release's Deployment, as the Deployment's ServiceAccount: its kubeconfig
// impersonates that account, so every request is authorized by the chart's
// RBAC alone. Only the listen addresses are overridden, to free loopback
// ports. It waits until the operator holds the leader Lease.
func startOperator(t *testing.T, r release) *cluster.Process {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	deployments := &appsv1.DeploymentList{}
	g.Expect(kube.List(ctx, deployments, client.InNamespace(r.namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": r.name})).To(Succeed())
	g.Expect(deployments.Items).To(HaveLen(1), "the release should have one Deployment")
	op := startOperatorOf(t, r, &deployments.Items[0], "operator")

	// Holding the Lease proves the leader election Role works.
	g.Eventually(func(g Gomega) {
		g.Expect(op.Exited()).To(BeFalse(), "the operator exited:\n%s", cluster.Tail(op.Log(), 30))
		lease := &coordinationv1.Lease{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: leaseName}, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Log("the operator holds the leader Lease")
	return op
}

// startOperatorOf runs one replica of a Deployment of the release: its
// command line, as its ServiceAccount, with extra flags appended.
func startOperatorOf(t *testing.T, r release, d *appsv1.Deployment, name string, extra ...string) *cluster.Process {
	t.Helper()
	opts := operatorOf(t, r, d, name, testbed.Kubeconfig(), extra...)
	op, err := cluster.StartProcess(opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := op.Stop(15 * time.Second); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, cluster.Tail(op.Log(), 60))
		}
	})
	return op
}

// operatorOf is how one replica of a Deployment of the release runs: its
// command line, as its ServiceAccount (through the API server that the
// kubeconfig at server names), with extra flags appended.
func operatorOf(t *testing.T, r release, d *appsv1.Deployment, name, server string, extra ...string) cluster.ProcessOptions {
	t.Helper()
	g := NewWithT(t)
	pod := d.Spec.Template.Spec
	g.Expect(pod.Containers).NotTo(BeEmpty())
	args := append([]string{}, pod.Containers[0].Args...)
	g.Expect(args).To(ContainElement("--leader-elect"))

	identity := fmt.Sprintf("system:serviceaccount:%s:%s", r.namespace, pod.ServiceAccountName)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "operator.kubeconfig")
	g.Expect(cluster.WriteImpersonatingKubeconfig(server, kubeconfig, identity)).To(Succeed())

	// Later flags win: the chart's listen addresses become free loopback ports.
	args = append(args, "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0")
	// The chart denies loopback; the sample agents here listen on it.
	args = append(args, "--agent-deny-cidrs=")
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--push-listen=") }) {
		args = append(args, "--push-listen=127.0.0.1:0")
	}
	args = append(args, extra...)
	env := append([]string{"KUBECONFIG=" + kubeconfig}, resourceEnv(pod.Containers[0])...)
	t.Logf("starting %s as %s: %s %s", name, identity, strings.Join(env[1:], " "), strings.Join(args, " "))
	return cluster.ProcessOptions{Name: name, Path: filepath.Join(binaries, "cmd"), Args: args,
		Env: env, LogPath: filepath.Join(dir, "operator.log")}
}

// resourceEnv is what the kubelet would set from the container's resource
// fields (the chart's GOMEMLIMIT is the memory limit), so the process runs
// with the runtime settings it has in the pod.
func resourceEnv(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
			continue
		}
		name, _ := strings.CutPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits.")
		if q, ok := c.Resources.Limits[corev1.ResourceName(name)]; ok {
			out = append(out, fmt.Sprintf("%s=%d", e.Name, q.Value()))
		}
	}
	return out
}

// expectNoForbidden fails when the API server refused the operator anything:
// the chart's RBAC must cover everything it does.
func expectNoForbidden(t *testing.T, op *cluster.Process) {
	t.Helper()
	var refused []string
	for line := range strings.SplitSeq(op.Log(), "\n") {
		// A namespace being deleted (left by an earlier run) refuses new
		// Events to everyone; that is not RBAC.
		if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, "because it is being terminated") {
			refused = append(refused, line)
		}
	}
	if len(refused) > 0 {
		t.Errorf("the operator was refused by RBAC %d time(s), first:\n%s", len(refused), strings.Join(refused[:min(len(refused), 5)], "\n"))
	}
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startWorker runs the sample worker agent on a free loopback port and
// returns its URL and process (whose log records each task it cancels).
func startWorker(t *testing.T) (string, *cluster.Process) {
	t.Helper()
	worker, err := cluster.StartProcess(cluster.ProcessOptions{
		Name: "worker", Path: filepath.Join(binaries, "worker"),
		Args:    []string{"-listen", "127.0.0.1:0", "-name", "worker", "-steps", "1", "-step-delay", "100ms"},
		LogPath: filepath.Join(t.TempDir(), "worker.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("worker log (last lines):\n%s", cluster.Tail(worker.Log(), 30))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := worker.WaitFor(ctx, listening)
	if err != nil {
		t.Fatal(err)
	}
	return m[1], worker
}

// delegationWorkers is the line the operator logs once its Delegation
// controller runs (controller-runtime's).
var delegationWorkers = regexp.MustCompile(`Starting workers.*"controller":"delegation"`)

// killedOperator runs a release's operator as one process after another,
// without leader election, so each successor takes over at once: kill
// SIGKILLs the running process and starts the next, as the kubelet starts a
// killed container again.
type killedOperator struct {
	t  *testing.T
	g  *WithT
	r  release
	d  *appsv1.Deployment
	op *cluster.Process
	n  int
}

// startKilledOperator starts the release's first operator process and waits
// for its workers. At the end of the test the Delegations of ns are deleted
// while an operator still runs, so no finalizer outlives it.
func startKilledOperator(t *testing.T, r release, ns string) *killedOperator {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	deployments := &appsv1.DeploymentList{}
	g.Expect(kube.List(ctx, deployments, client.InNamespace(r.namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": r.name})).To(Succeed())
	g.Expect(deployments.Items).To(HaveLen(1))
	k := &killedOperator{t: t, g: g, r: r, d: &deployments.Items[0]}
	k.start()
	t.Cleanup(func() {
		_ = kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(ns))
		g.Eventually(func(g Gomega) {
			list := &v1alpha1.DelegationList{}
			g.Expect(kube.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
		if t.Failed() {
			t.Logf("last operator log:\n%s", cluster.Tail(k.op.Log(), 60))
		}
		_ = k.op.Stop(15 * time.Second)
	})
	return k
}

// killedOperatorRun installs the chart as release name, makes the test's
// namespace "tether-e2e-<name>-<run>" with an Agent "agent" at agentURL
// (ready), and starts the release's operator for it as a killedOperator.
func killedOperatorRun(t *testing.T, name, agentURL string) (*workspace, *killedOperator) {
	t.Helper()
	runID := newRunID()
	r := installChart(t, "tether-"+name, "tether-e2e-"+name+"-system-"+runID)
	ns := "tether-e2e-" + name + "-" + runID
	newNamespace(t, ns)
	w := newWorkspace(t, ns)
	op := startKilledOperator(t, r, ns)
	w.createAgent("agent", agentURL)
	w.waitAgentReady("agent")
	return w, op
}

func (k *killedOperator) start() {
	k.t.Helper()
	var err error
	k.op, err = cluster.StartProcess(operatorOf(k.t, k.r, k.d, fmt.Sprintf("operator-%d", k.n), testbed.Kubeconfig(), "--leader-elect=false"))
	k.g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = k.op.WaitFor(ctx, delegationWorkers)
	k.g.Expect(err).NotTo(HaveOccurred(), "operator %d never started its workers:\n%s", k.n, cluster.Tail(k.op.Log(), 30))
}

// kill SIGKILLs the running operator and starts the next.
func (k *killedOperator) kill() {
	k.t.Helper()
	k.op.Kill()
	k.n++
	k.start()
}

// log is the running operator's log.
func (k *killedOperator) log() string { return k.op.Log() }
