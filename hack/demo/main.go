/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command demo runs tether end to end on this machine: a local control plane
// (etcd, kube-apiserver, kube-controller-manager), the operator, the sample
// agents, and a delegation tree that is run and then cancelled from the root.
// `make demo` builds the binaries and runs it. DEMO_KEEP=1 leaves everything
// running and prints the KUBECONFIG to use.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

const namespace = "demo"

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func main() {
	// Progress lines only: controller-runtime's client says nothing unless it fails.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

type demo struct {
	root    string
	workDir string
	c       client.Client
	cluster *cluster.Cluster
	procs   []*cluster.Process
}

func run(ctx context.Context) (err error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	workDir, err := os.MkdirTemp("", "tether-demo-")
	if err != nil {
		return err
	}
	d := &demo{root: root, workDir: workDir}
	keep := os.Getenv("DEMO_KEEP") != ""
	defer func() {
		if keep && err == nil {
			return
		}
		d.stop()
	}()

	say("starting a local control plane (the first run builds it from source: several minutes)")
	if d.cluster, err = cluster.Start(ctx, cluster.Options{WorkDir: workDir, Logf: func(f string, a ...any) { say(f, a...) }}); err != nil {
		return err
	}
	if err := d.connect(); err != nil {
		return err
	}
	// The garbage collector notices new kinds only every 30s; a restart makes
	// it follow Delegation ownerReferences at once.
	if err := d.cluster.RestartControllerManager(ctx); err != nil {
		return err
	}
	if err := d.startProcesses(); err != nil {
		return err
	}
	if err := d.applySamples(ctx); err != nil {
		return err
	}

	say("the tree runs: summarize finishes, survey fans out to three workers, draft keeps going")
	if err := d.watchTree(ctx, 3*time.Minute, d.treeIsBusy); err != nil {
		return err
	}
	say("cancelling the root (spec.cancel: true): every unsettled descendant is cancelled at its agent")
	if err := d.cancelRoot(ctx); err != nil {
		return err
	}
	if err := d.watchTree(ctx, 2*time.Minute, d.treeIsSettled); err != nil {
		return err
	}
	d.summary()

	if keep {
		say("DEMO_KEEP is set: everything keeps running. Look around:")
		fmt.Printf("    export KUBECONFIG=%s PATH=%s:$PATH\n", d.cluster.Kubeconfig(), filepath.Join(root, "bin"))
		fmt.Printf("    kubectl tether tree research -n %s\n", namespace)
		fmt.Printf("    kubectl get dlg -n %s\n", namespace)
		fmt.Printf("    kubectl get tagent -n %s\n", namespace)
		fmt.Printf("    kubectl tether events research -n %s\n", namespace)
		fmt.Printf("    kubectl tether describe research -n %s\n", namespace)
		fmt.Println("Press Ctrl-C to stop it all.")
		<-ctx.Done()
		d.stop()
	}
	return nil
}

func (d *demo) connect() error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	say("installing the CRDs")
	if _, err := envtest.InstallCRDs(d.cluster.Config(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(d.root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return err
	}
	c, err := client.New(d.cluster.Config(), client.Options{Scheme: scheme})
	d.c = c
	return err
}

// startProcesses runs the operator and the two sample agents as processes.
func (d *demo) startProcesses() error {
	bin := func(name string) string { return filepath.Join(d.root, "bin", name) }
	workerAddr, orchAddr := freeAddr(), freeAddr()
	specs := []struct {
		name, ready string
		opts        cluster.ProcessOptions
	}{
		{"operator", "Starting workers", cluster.ProcessOptions{Path: bin("manager"),
			Args: []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--cancel-timeout=20s"},
			Env:  []string{"KUBECONFIG=" + d.cluster.Kubeconfig()}}},
		{"worker agent", "listening on", cluster.ProcessOptions{Path: bin("worker"), Args: []string{"-listen", workerAddr}}},
		{"orchestrator agent", "listening on", cluster.ProcessOptions{Path: bin("orchestrator"),
			Args: []string{"-listen", orchAddr, "-kubeconfig", d.cluster.Kubeconfig()}}},
	}
	for _, s := range specs {
		say("starting the %s", s.name)
		s.opts.Name = s.name
		s.opts.LogPath = filepath.Join(d.workDir, strings.ReplaceAll(s.name, " ", "-")+".log")
		p, err := cluster.StartProcess(s.opts)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err = p.WaitFor(ctx, regexp.MustCompile(regexp.QuoteMeta(s.ready)))
		cancel()
		if err != nil {
			return fmt.Errorf("%s did not start: %w\n%s", s.name, err, cluster.Tail(p.Log(), 20))
		}
	}
	agentURL["worker"], agentURL["orchestrator"] = "http://"+workerAddr, "http://"+orchAddr
	return nil
}

var agentURL = map[string]string{}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func (d *demo) stop() {
	say("stopping everything the demo started")
	for _, p := range slices.Backward(d.procs) {
		_ = p.Stop(5 * time.Second)
	}
	if d.cluster != nil {
		_ = d.cluster.Stop()
	}
	_ = os.RemoveAll(d.workDir)
}

// tree prints the tree as the kubectl plugin draws it.
func (d *demo) tree(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, filepath.Join(d.root, "bin", "kubectl-tether"), "tree", "research",
		"-n", namespace, "--kubeconfig", d.cluster.Kubeconfig(), "--no-color").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(tree: %v) %s", err, out)
	}
	return string(out)
}
