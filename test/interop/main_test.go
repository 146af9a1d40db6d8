/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package interop checks that tether works with agents built on a second A2A
// implementation: the official JS SDK (examples/agents/js-echo), over the 1.0
// JSON-RPC binding, the 1.0 HTTP+JSON one and the 0.3 one. It runs a real API server (envtest), the
// operator's reconcilers in this process and the JS agent as node processes.
// Without node and npm every test skips; with INTEROP_REQUIRED set (make
// interop) they fail instead.
package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/controller"
	"github.com/tether-dev/tether/test/cluster"
)

// Agent modes (the agent's --protocol flag): which bindings its card offers.
const (
	modeV1   = "1.0"
	modeV03  = "0.3"
	modeBoth = "both"
	// modeREST: protocol 1.0 over HTTP+JSON only.
	modeREST = "rest"
)

var (
	kube client.Client
	// restConfig is the test API server's admin configuration.
	restConfig *rest.Config
	// agents by mode.
	agents = map[string]*jsAgent{}
	// skipReason is set when the tests cannot run here (no node or npm).
	skipReason string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "interop: "+format+"\n", args...)
}

func run(m *testing.M) int {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	began := time.Now()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	root, err := cluster.RepoRoot()
	if err != nil {
		progress("%v", err)
		return 1
	}
	dir := filepath.Join(root, "examples", "agents", "js-echo")
	node, err := installAgent(ctx, dir)
	if err != nil {
		skipReason = err.Error()
		progress("skipping every test: %s", skipReason)
		return m.Run()
	}

	binDir, err := cluster.BinDir("")
	if err != nil {
		progress("control plane: %v", err)
		return 1
	}
	progress("starting etcd and kube-apiserver")
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		progress("cannot start envtest: %v", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	restConfig = cfg

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		progress("%v", err)
		return 1
	}
	if kube, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		progress("%v", err)
		return 1
	}
	stopOperator, err := startOperator(ctx, cfg, scheme)
	if err != nil {
		progress("operator: %v", err)
		return 1
	}
	defer stopOperator() // before the API server stops

	logDir, err := os.MkdirTemp("", "tether-interop-")
	if err != nil {
		progress("%v", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(logDir) }()
	progress("starting the JS agents (protocol modes %s, %s, %s, %s)", modeV1, modeV03, modeBoth, modeREST)
	if err := startAgents(ctx, node, dir, logDir); err != nil {
		progress("%v", err)
		return 1
	}
	defer func() {
		for _, a := range agents {
			a.Close()
		}
	}()
	progress("building and starting the TypeScript agentkit's sample (examples/agents/ts-worker) three times: JSON-RPC, " +
		"HTTP+JSON only with a signed card, and JSON-RPC checking its callers with TokenReview")
	err = startTSWorkers(ctx, node, root, logDir, cfg)
	defer func() {
		for _, a := range []*jsAgent{tsWorker, tsRESTWorker, tsIdentityWorker} {
			if a != nil {
				a.Close()
			}
		}
	}()
	if err != nil {
		progress("%v", err) // node and npm are here: a kit that does not build is a failure
		return 1
	}
	progress("ready after %s", time.Since(began).Round(100*time.Millisecond))
	return m.Run()
}

// installAgent finds node and npm and runs `npm ci` in the agent's folder
// when node_modules is missing or older than the lock file. It returns the
// node binary; an error means the tests cannot run here.
func installAgent(ctx context.Context, dir string) (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("node is not installed (the JS SDK agent needs Node.js 20 or later)")
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("node --version: %w", err)
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		return "", fmt.Errorf("node %s is too old (the JS SDK agent needs Node.js 20 or later)", version)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm is not installed (needed to install the JS SDK agent)")
	}
	if !stale(dir) {
		return node, nil
	}
	progress("installing the JS agent's dependencies (npm ci in examples/agents/js-echo)")
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm ci in %s failed: %w", dir, err)
	}
	return node, nil
}

// stale reports whether node_modules must be (re)installed: npm writes
// node_modules/.package-lock.json on every install.
func stale(dir string) bool {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return true
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.ModTime().After(installed.ModTime()) {
			return true
		}
	}
	return false
}

func startAgents(ctx context.Context, node, dir, logDir string) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, mode := range []string{modeV1, modeV03, modeBoth, modeREST} {
		wg.Go(func() {
			a, err := startJSAgent(ctx, node, dir, logDir, mode)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			agents[mode] = a
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startOperator runs the reconcilers in this process, watching every
// namespace; the function it returns stops them and waits.
func startOperator(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (func(), error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	// The operator knows its own ServiceAccount, as the chart tells it: it
	// sends that identity's tokens to Agents with spec.auth.serviceAccountToken.
	tokens, err := serviceAccountTokens(cfg, operatorNamespace, operatorServiceAccount)
	if err != nil {
		return nil, err
	}
	connector := &agentio.Connector{SecretReader: mgr.GetAPIReader(), Tokens: tokens}
	rec := mgr.GetEventRecorder("tether")
	if err := (&controller.AgentReconciler{Client: mgr.GetClient(), Connector: connector, Recorder: rec}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	opts := controller.Options{CancelTimeout: 10 * time.Second, SendTimeout: 30 * time.Second}
	if err := (&controller.DelegationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Connector: connector,
		Recorder: rec, Options: opts}).SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			progress("manager: %v", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
