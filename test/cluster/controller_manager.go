/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllerManager runs only the controllers a cluster without nodes needs
// for tether: the garbage collector (ownerReference cascades) and the
// namespace controller (deleting a namespace empties it). It serves nothing
// (--secure-port=0), so it needs no port.
type controllerManager struct {
	binDir, workDir, kubeconfig string
	starts                      int
	process                     *Process
}

func newControllerManager(env *envtest.Environment, binDir, workDir string) (*controllerManager, error) {
	user, err := env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(workDir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	return &controllerManager{binDir: binDir, workDir: workDir, kubeconfig: path}, nil
}

// start starts the process and waits until the garbage collector works.
func (m *controllerManager) start(ctx context.Context, cfg *rest.Config) error {
	m.starts++
	p, err := StartProcess(ProcessOptions{
		Name: "kube-controller-manager",
		Path: filepath.Join(m.binDir, "kube-controller-manager"),
		Args: []string{
			"--kubeconfig=" + m.kubeconfig,
			"--controllers=garbagecollector,namespace",
			"--leader-elect=false",
			"--secure-port=0",
		},
		LogPath: filepath.Join(m.workDir, fmt.Sprintf("kube-controller-manager-%d.log", m.starts)),
	})
	if err != nil {
		return err
	}
	m.process = p
	return waitForGarbageCollection(ctx, cfg, p)
}

func (m *controllerManager) stop() error {
	if m == nil || m.process == nil {
		return nil
	}
	return m.process.Stop(10 * time.Second)
}

func (m *controllerManager) log() string {
	if m == nil || m.process == nil {
		return ""
	}
	return m.process.Log()
}

// waitForGarbageCollection deletes an owner ConfigMap and waits for the
// garbage collector to delete its dependent: until then the controller
// manager is not ready, and cascade tests would fail for the wrong reason.
func waitForGarbageCollection(ctx context.Context, cfg *rest.Config, kcm *Process) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-probe-", Namespace: metav1.NamespaceDefault}}
	if err := c.Create(ctx, owner); err != nil {
		return err
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "gc-probe-dependent-", Namespace: metav1.NamespaceDefault,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	if err := c.Create(ctx, dependent); err != nil {
		return err
	}
	if err := c.Delete(ctx, owner); err != nil {
		return err
	}
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if kcm.Exited() {
			return fmt.Errorf("kube-controller-manager exited:\n%s", Tail(kcm.Log(), 40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the garbage collector did not delete a dependent ConfigMap: %w\n%s", ctx.Err(), Tail(kcm.Log(), 40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
