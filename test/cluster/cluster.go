/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package cluster runs a real local Kubernetes control plane for end-to-end
// tests and demos: etcd and kube-apiserver (started through envtest) and
// kube-controller-manager with the garbage collector and namespace
// controllers, so ownerReference cascades and namespace deletion really
// happen. There is no kubelet: pods are never run. Operators and agents run
// as local processes (see StartProcess).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options for Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: $KUBEBUILDER_ASSETS, else what hack/control-plane.sh prints
	// (it builds them on first use).
	BinDir string
	// WorkDir receives kubeconfigs and logs. Default: a new temporary
	// folder, removed by Stop.
	WorkDir string
	// Logf, when set, gets one line per step.
	Logf func(format string, args ...any)
	// FeatureGates are turned on in kube-apiserver (e.g.
	// ShardedListAndWatch, for server-side sharded list and watch).
	FeatureGates []string
}

// ShardedListAndWatch is kube-apiserver's feature gate for server-side
// sharded list and watch (KEP-5866, alpha in 1.36+).
const ShardedListAndWatch = "ShardedListAndWatch"

// EnableFeatureGates turns feature gates on in an envtest environment's
// kube-apiserver; call it before env.Start.
func EnableFeatureGates(env *envtest.Environment, gates ...string) {
	if len(gates) == 0 {
		return
	}
	on := make([]string, len(gates))
	for i, g := range gates {
		on[i] = g + "=true"
	}
	env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", strings.Join(on, ","))
}

// Cluster is a running control plane, or an existing one (Connect).
type Cluster struct {
	env        *envtest.Environment
	kcm        *controllerManager
	config     *rest.Config
	kubeconfig string
	workDir    string
	ownWorkDir bool
	logf       func(string, ...any)
}

// Start starts etcd, kube-apiserver and kube-controller-manager on free
// loopback ports and waits until the garbage collector works.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	c := &Cluster{logf: opts.Logf, workDir: opts.WorkDir}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.workDir == "" {
		if c.workDir, err = os.MkdirTemp("", "tether-cluster-"); err != nil {
			return nil, err
		}
		c.ownWorkDir = true
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	binDir, err := BinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}

	c.logf("starting etcd and kube-apiserver from %s", binDir)
	c.env = &envtest.Environment{BinaryAssetsDirectory: binDir}
	// Enforce what production API servers enforce: setting blockOwnerDeletion
	// needs update on the owner's finalizers, so the operator's RBAC is
	// checked for it too.
	c.env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	EnableFeatureGates(c.env, opts.FeatureGates...)
	if c.config, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	c.kubeconfig = filepath.Join(c.workDir, "admin.kubeconfig")
	if err := os.WriteFile(c.kubeconfig, c.env.KubeConfig, 0o600); err != nil {
		return nil, err
	}

	c.logf("starting kube-controller-manager (garbage collector, namespace controller)")
	if c.kcm, err = newControllerManager(c.env, binDir, c.workDir); err != nil {
		return nil, err
	}
	if err := c.kcm.start(ctx, c.config); err != nil {
		return nil, err
	}
	c.logf("control plane ready: %s", c.config.Host)
	return c, nil
}

// Connect uses an existing cluster through a kubeconfig (its current
// context). Stop leaves that cluster alone.
func Connect(kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	abs, err := filepath.Abs(kubeconfig)
	if err != nil {
		return nil, err
	}
	return &Cluster{config: cfg, kubeconfig: abs, logf: func(string, ...any) {}}, nil
}

// Kubeconfig is the path of a kubeconfig with admin rights.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// Config is a client configuration with admin rights.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// ControllerManagerLog returns kube-controller-manager's output so far (empty
// for a cluster that was connected to).
func (c *Cluster) ControllerManagerLog() string { return c.kcm.log() }

// RestartControllerManager restarts kube-controller-manager and waits until
// its garbage collector works. The garbage collector discovers new kinds
// only every 30 s, so until then it ignores owner references between objects
// of CRDs installed after it started; a restart after installing CRDs makes
// their cascades immediate. Does nothing on a connected cluster.
func (c *Cluster) RestartControllerManager(ctx context.Context) error {
	if c.kcm == nil {
		return nil
	}
	if err := c.kcm.stop(); err != nil {
		return err
	}
	c.logf("restarting kube-controller-manager")
	return c.kcm.start(ctx, c.config)
}

// Stop stops every process Start started and removes its temporary files.
func (c *Cluster) Stop() error {
	var errs []error
	errs = append(errs, c.kcm.stop())
	if c.env != nil {
		errs = append(errs, c.env.Stop())
	}
	if c.ownWorkDir {
		errs = append(errs, os.RemoveAll(c.workDir))
	}
	return errors.Join(errs...)
}
