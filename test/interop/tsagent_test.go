/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tether-dev/tether/test/cluster"
)

// tsWorker is the ts-worker agent (examples/agents/ts-worker, on the
// TypeScript agentkit in sdk/typescript) behind a recording proxy, serving
// JSON-RPC (1.0 and 0.3). tsRESTWorker is a second one that serves only
// HTTP+JSON and signs its card with tsCardKey; tsCardKeySet is the key set
// the kit printed for it (its publicKeySet).
var (
	tsWorker, tsRESTWorker *jsAgent
	tsCardKey              *jose.JSONWebKey
	tsCardKeySet           string
)

// startTSWorkers builds the TypeScript agentkit and the sample, and starts
// the sample three times with a kubeconfig for the test's API server, so its
// delegate() creates child Delegations there: twice as its admin, and once
// (tsIdentityWorker) as a ServiceAccount of its own.
func startTSWorkers(ctx context.Context, node, root, logDir string, cfg *rest.Config) error {
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
	keyFile := filepath.Join(logDir, "ts-card-key.json")
	if tsCardKey, err = writeCardSigningKey(keyFile, "ts-kit"); err != nil {
		return err
	}
	start := func(name, mode string, args ...string) (*jsAgent, []string, error) {
		return startTSWorker(ctx, node, filepath.Join(sample, "dist", "agent.js"), kubeconfig, logDir, name, mode, args...)
	}
	if tsWorker, _, err = start("ts-worker", modeBoth); err != nil {
		return err
	}
	var keySet []string
	tsRESTWorker, keySet, err = start("ts-worker-rest", modeREST, "--bindings=rest", "--card-key="+keyFile)
	if err != nil {
		return err
	}
	if len(keySet) < 2 {
		return errors.New("ts-worker-rest printed no key set for its signed card")
	}
	tsCardKeySet = keySet[1]
	identityKubeconfig := filepath.Join(logDir, "ts-worker-identity.kubeconfig")
	if err := writeAgentIdentityKubeconfig(ctx, cfg, identityKubeconfig); err != nil {
		return fmt.Errorf("the sample's ServiceAccount: %w", err)
	}
	tsIdentityWorker, _, err = startTSWorker(ctx, node, filepath.Join(sample, "dist", "agent.js"), identityKubeconfig, logDir,
		"ts-worker-identity", modeBoth, "--token-audience="+tsIdentityAudience, "--operator="+operatorUsername())
	return err
}

// cardKeySetLine is what the sample prints for a signed card.
var cardKeySetLine = regexp.MustCompile(`card signed; its key set: (\S+)`)

// startTSWorker starts the sample behind a recording proxy whose URL it
// writes into its card; it returns the key set line's match when the card is signed.
func startTSWorker(ctx context.Context, node, script, kubeconfig, logDir, name, mode string, args ...string) (*jsAgent, []string, error) {
	a := &jsAgent{mode: mode, dropped: map[string]bool{}}
	a.proxy = httptest.NewServer(a)
	p, err := cluster.StartProcess(cluster.ProcessOptions{
		Name:    name,
		Path:    node,
		Args:    append([]string{script, "--public-url=" + a.proxy.URL}, args...),
		Env:     []string{"KUBECONFIG=" + kubeconfig},
		LogPath: filepath.Join(logDir, name+".log"),
	})
	if err != nil {
		a.proxy.Close()
		return nil, nil, err
	}
	a.process = p
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := p.WaitFor(ctx, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	u, err := url.Parse(m[1])
	if err != nil {
		a.Close()
		return nil, nil, fmt.Errorf("%s printed a bad address: %w", name, err)
	}
	a.target.Store(u)
	return a, cardKeySetLine.FindStringSubmatch(p.Log()), nil
}

// writeCardSigningKey writes a new private P-256 JSON Web Key, as a key
// Secret mounted into the agent's pod would hold it.
func writeCardSigningKey(path, kid string) (*jose.JSONWebKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	key := &jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256)}
	b, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	return key, os.WriteFile(path, b, 0o600)
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
