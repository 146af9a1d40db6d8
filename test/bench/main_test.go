/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package bench measures the operator on a real local control plane: how fast
// tasks are sent and settled, how fast a cancel or a deletion reaches every
// child's agent, and what a lease renewal costs the API server. Run with
// `make bench`; numbers are reported as benchmark metrics, never asserted as
// timings.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/controller"
	"github.com/tether-dev/tether/pkg/agentkit"
	"github.com/tether-dev/tether/test/cluster"
)

var (
	kube  client.Client
	agent *countingAgent
)

// TestMain starts the control plane (with the garbage collector), the
// operator in this process and one sample worker agent.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // `go test ./...` without -bench: nothing to set up
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := context.WithCancel(context.Background())
	c, err := cluster.Start(ctx, cluster.Options{Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "control plane:", err)
		os.Exit(1)
	}
	code := func() int {
		defer func() { stop(); _ = c.Stop() }()
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = v1alpha1.AddToScheme(scheme)
		if _, err := envtest.InstallCRDs(c.Config(), envtest.CRDInstallOptions{
			Paths: []string{"../../config/crd/bases"}, ErrorIfPathMissing: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := c.RestartControllerManager(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if kube, err = client.New(c.Config(), client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := startOperator(ctx, c, scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		agent = newCountingAgent()
		defer agent.Close()
		return m.Run()
	}()
	os.Exit(code)
}

func startOperator(ctx context.Context, c *cluster.Cluster, scheme *runtime.Scheme) error {
	cfg := c.Config()
	cfg.QPS, cfg.Burst = 200, 300 // the operator's defaults
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	connector := &controller.AgentConnector{SecretReader: mgr.GetAPIReader()}
	rec := mgr.GetEventRecorder("tether")
	if err := (&controller.AgentReconciler{Client: mgr.GetClient(), Connector: connector, Recorder: rec}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&controller.DelegationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Connector: connector,
		Recorder: rec, Options: controller.Options{CancelTimeout: 30 * time.Second}}).SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

// countingAgent is the sample worker behind a handler that counts the
// JSON-RPC methods it receives.
type countingAgent struct {
	srv  *agentkit.Server
	http *httptest.Server
	mu   sync.Mutex
	n    map[string]int
}

func newCountingAgent() *countingAgent {
	a := &countingAgent{n: map[string]int{}}
	quiet := slog.New(slog.DiscardHandler)
	a.srv = agentkit.NewServer(sample.WorkerCard("bench-worker"),
		sample.Worker{Name: "bench-worker", Steps: 1, Delay: 0, Spend: 1, Meter: "tokens", Log: quiet}, agentkit.WithLogger(quiet))
	a.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Method string }
		if json.Unmarshal(body, &req) == nil && req.Method != "" {
			a.mu.Lock()
			a.n[req.Method]++
			a.mu.Unlock()
		}
		a.srv.ServeHTTP(w, r)
	}))
	return a
}

func (a *countingAgent) Count(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[method]
}

func (a *countingAgent) Close() { a.http.Close(); a.srv.Close() }

// newNamespace makes a namespace with an Agent for the worker.
func newNamespace(b *testing.B) string {
	b.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := kube.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "worker"},
		Spec: v1alpha1.AgentSpec{URL: agent.http.URL, PollInterval: &metav1.Duration{Duration: time.Second}}}
	if err := kube.Create(ctx, a); err != nil {
		b.Fatal(err)
	}
	waitFor(b, time.Minute, func() bool {
		_ = kube.Get(ctx, client.ObjectKeyFromObject(a), a)
		return a.Status.ProtocolVersion != ""
	})
	return ns.Name
}

func waitFor(b *testing.B, limit time.Duration, done func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			b.Fatalf("not done within %s", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
