/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
)

var (
	cfg       *rest.Config
	k8sClient client.Client
	scheme    = runtime.NewScheme()
)

// TestMain starts one real kube-apiserver and etcd for the package. The
// binaries come from KUBEBUILDER_ASSETS, or are built by hack/control-plane.sh.
func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		out, err := exec.Command("bash", filepath.Join("..", "..", "hack", "control-plane.sh")).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cannot build the control plane:", err)
			os.Exit(1)
		}
		_ = os.Setenv("KUBEBUILDER_ASSETS", strings.TrimSpace(string(out)))
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot start envtest:", err)
		os.Exit(1)
	}
	if k8sClient, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// operator runs the reconcilers in a manager that watches one namespace, so
// tests run in parallel without seeing each other's objects.
type operator struct {
	stop context.CancelFunc
	done chan struct{}
}

func testOptions() Options {
	return Options{CancelTimeout: 3 * time.Second, SendTimeout: 20 * time.Second}
}

func startOperator(t *testing.T, ns string, opts Options) *operator {
	t.Helper()
	return startOperatorWith(t, ns, opts, nil)
}

// startOperatorWith lets a test configure the DelegationReconciler (e.g. its
// test hooks) before the manager starts.
func startOperatorWith(t *testing.T, ns string, opts Options, configure func(*DelegationReconciler)) *operator {
	t.Helper()
	return startOperatorOn(t, cfg, ns, opts, configure)
}

// startOperatorOn runs the operator against another API server.
func startOperatorOn(t *testing.T, restConfig *rest.Config, ns string, opts Options, configure func(*DelegationReconciler)) *operator {
	t.Helper()
	return startOperatorIn(t, restConfig, []string{ns}, opts, configure)
}

// startOperatorIn runs one operator for several namespaces.
func startOperatorIn(t *testing.T, restConfig *rest.Config, namespaces []string, opts Options, configure func(*DelegationReconciler)) *operator {
	t.Helper()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   CacheOptions(namespaces...),
		// Several operators run in one test process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	connector := &agentio.Connector{SecretReader: mgr.GetAPIReader()}
	calls := agentio.NewDispatcher(0, 0)
	if err := (&AgentReconciler{Client: mgr.GetClient(), Connector: connector, Calls: calls, Recorder: mgr.GetEventRecorder("tether")}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	r := &DelegationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Connector: connector, Calls: calls,
		Recorder: mgr.GetEventRecorder("tether"), Options: opts}
	if configure != nil {
		configure(r)
	}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	op := &operator{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.Stop)
	return op
}

// Stop stops the operator and waits until it has stopped.
func (o *operator) Stop() {
	o.stop()
	<-o.done
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
