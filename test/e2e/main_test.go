/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package e2e installs the chart on a real control plane (etcd,
// kube-apiserver, kube-controller-manager) and runs the operator binary as
// its own process with exactly the chart's RBAC: it impersonates the chart's
// ServiceAccount. Sample agents run as processes on loopback. With
// E2E_KUBECONFIG set, an existing cluster is used instead of a local one.
// `go test -short` skips everything that needs a cluster.
package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

const helmVersion = "v3.22.0"

var (
	// repoRoot is the repository; chartDir the chart under test.
	repoRoot, chartDir string
	// helmBin is the helm binary (bin/helm, installed when missing);
	// helmHome keeps its cache and configuration apart from the user's.
	helmBin, helmHome string
	// kube is an admin client of the cluster under test; nil in -short mode.
	kube     client.WithWatch
	testbed  *cluster.Cluster
	binaries string // folder with the operator ("cmd") and the worker agent
	scheme   = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Errors only: no "log.SetLogger(...) was never called" stack trace.
	crlog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return 1, err
		}
	}
	var err error
	if repoRoot, err = cluster.RepoRoot(); err != nil {
		return 1, err
	}
	chartDir = filepath.Join(repoRoot, "charts", "tether")
	helmBin = filepath.Join(repoRoot, "bin", "helm")
	if helmHome, err = os.MkdirTemp("", "tether-e2e-helm-"); err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(helmHome) }()
	if testing.Short() {
		return m.Run(), nil
	}
	start := time.Now()
	if err := installHelm(); err != nil {
		return 1, err
	}

	// Compile the operator and the worker while the control plane starts.
	built := make(chan error, 1)
	tmp, err := os.MkdirTemp("", "tether-e2e-bin-")
	if err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	binaries = tmp
	go func() { built <- buildBinaries(binaries) }()

	if path := os.Getenv("E2E_KUBECONFIG"); path != "" {
		logf("using the cluster of E2E_KUBECONFIG=%s", path)
		testbed, err = cluster.Connect(path)
	} else {
		// With server-side sharded list and watch, as in Kubernetes 1.36+
		// with the alpha gate on; the shard tests also run a shard that
		// filters on its own.
		testbed, err = cluster.Start(context.Background(), cluster.Options{Logf: logf,
			FeatureGates: []string{cluster.ShardedListAndWatch}})
	}
	if err != nil {
		return 1, errors.Join(err, <-built)
	}
	defer func() {
		if err := testbed.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}()
	if kube, err = client.NewWithWatch(testbed.Config(), client.Options{Scheme: scheme}); err != nil {
		return 1, errors.Join(err, <-built)
	}
	if err := <-built; err != nil {
		return 1, err
	}
	logf("set up in %s", time.Since(start).Round(time.Millisecond))
	return m.Run(), nil
}

// installHelm installs the pinned helm into bin/ unless it is there already.
func installHelm() error {
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "install-helm.sh"), helmBin, helmVersion)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing helm: %w\n%s", err, out)
	}
	return nil
}

// buildBinaries compiles the operator and the sample worker in one go build.
func buildBinaries(dir string) error {
	logf("building the operator and the worker agent")
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd", "./examples/agents/worker")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// requireCluster skips a test in -short mode, where no cluster is started.
func requireCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a control plane; skipped in -short mode")
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

// newRunID makes a test's namespaces its own: those of an earlier run (or
// -count iteration) may still be terminating.
func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
