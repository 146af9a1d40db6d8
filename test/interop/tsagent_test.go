/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tether-dev/tether/test/cluster"
)

// tsWorker is the ts-worker agent (examples/agents/ts-worker, on the
// TypeScript agentkit in sdk/typescript) behind a recording proxy.
var tsWorker *jsAgent

// startTSWorker builds the TypeScript agentkit and the sample, and starts
// the sample with a kubeconfig for the test's API server, so its delegate()
// creates child Delegations there.
func startTSWorker(ctx context.Context, node, root, logDir string, cfg *rest.Config) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm is not installed (needed to build the TypeScript agentkit)")
	}
	sdk := filepath.Join(root, "sdk", "typescript")
	sample := filepath.Join(root, "examples", "agents", "ts-worker")
	// The sample links the kit's folder: the kit's dependencies and build first.
	for _, dir := range []string{sdk, sample} {
		if err := npmBuild(ctx, npm, root, dir); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(logDir, "ts-worker.kubeconfig")
	if err := writeKubeconfig(cfg, kubeconfig); err != nil {
		return err
	}

	a := &jsAgent{mode: modeBoth, dropped: map[string]bool{}}
	a.proxy = httptest.NewServer(a)
	p, err := cluster.StartProcess(cluster.ProcessOptions{
		Name:    "ts-worker",
		Path:    node,
		Args:    []string{filepath.Join(sample, "dist", "agent.js"), "--public-url=" + a.proxy.URL},
		Env:     []string{"KUBECONFIG=" + kubeconfig},
		LogPath: filepath.Join(logDir, "ts-worker.log"),
	})
	if err != nil {
		a.proxy.Close()
		return err
	}
	a.process = p
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := p.WaitFor(ctx, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		a.Close()
		return err
	}
	u, err := url.Parse(m[1])
	if err != nil {
		a.Close()
		return fmt.Errorf("ts-worker printed a bad address: %w", err)
	}
	a.target.Store(u)
	tsWorker = a
	return nil
}

// npmBuild installs a package's locked dependencies when they are missing
// or older than its lock file, then compiles it.
func npmBuild(ctx context.Context, npm, root, dir string) error {
	rel, _ := filepath.Rel(root, dir)
	steps := [][]string{{"run", "build"}}
	if stale(dir) {
		steps = append([][]string{{"ci", "--no-audit", "--no-fund"}}, steps...)
	}
	for _, args := range steps {
		progress("npm %v in %s", args[0]+" "+args[len(args)-1], rel)
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			return fmt.Errorf("npm %s in %s failed: %w", args[0], rel, err)
		}
	}
	return nil
}

// writeKubeconfig writes cfg (the test API server's admin credentials) as a
// kubeconfig file only this user can read.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Username: cfg.Username, Password: cfg.Password,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}
