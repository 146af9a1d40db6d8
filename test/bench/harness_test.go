/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

// env is one run: the control plane, the operator process, an admin client
// that counts its own Delegation writes, and an informer that notes when
// each Delegation appears and changes phase.
type env struct {
	t        *testing.T
	sz       sizes
	root     string
	cluster  *cluster.Cluster
	kube     client.Client
	config   *rest.Config
	operator *cluster.Process
	seen     *tracker
	// out receives the report and the operator's profiles.
	out string
	// pprof is the operator's profiler address, metrics its metrics
	// endpoint's (plain HTTP on loopback).
	pprof, metrics string
	// push is the address of the operator's push notification receiver.
	push string
	// ownWrites counts the Delegation writes this harness sent, so the
	// operator's share of the API server's count is what is left.
	ownWrites atomic.Int64
}

func newEnv(t *testing.T, sz sizes) *env {
	t.Helper()
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sz: sz, root: root}

	built := make(chan error, 1)
	go func() { built <- e.buildOperator() }()
	progress := func(f string, a ...any) { t.Logf(f, a...) }
	if e.cluster, err = cluster.Start(ctx, cluster.Options{Logf: progress, FeatureGates: []string{cluster.ShardedListAndWatch}}); err != nil {
		t.Fatal(err, <-built)
	}
	t.Cleanup(func() {
		if err := e.cluster.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	if err := <-built; err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := envtest.InstallCRDs(e.cluster.Config(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
		CRDs: []*apiextensionsv1.CustomResourceDefinition{floorCRD()},
	}); err != nil {
		t.Fatal(err)
	}
	// The garbage collector learns of the new kinds at once.
	if err := e.cluster.RestartControllerManager(ctx); err != nil {
		t.Fatal(err)
	}

	e.config = e.cluster.Config()
	e.config.QPS, e.config.Burst = 2000, 4000 // the harness must not be the bottleneck
	counting := rest.CopyConfig(e.config)
	counting.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/delegations") {
				e.ownWrites.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	if e.kube, err = client.New(counting, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if e.seen, err = startTracker(ctx, t, e.config, scheme); err != nil {
		t.Fatal(err)
	}
	e.startOperator()
	return e
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// buildOperator compiles the operator as it stands into bin/manager.
func (e *env) buildOperator() error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(e.root, "bin", "manager"), "./cmd")
	cmd.Dir = e.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd: %w\n%s", err, out)
	}
	return nil
}

// startOperator runs bin/manager against the control plane with the
// client limits the floors use, and env added to its environment.
func (e *env) startOperator(env ...string) {
	t := e.t
	e.pprof, e.push, e.metrics = freeAddr(t), freeAddr(t), freeAddr(t)
	args := []string{
		"--leader-elect=false", "--metrics-bind-address=" + e.metrics, "--metrics-secure=false", "--health-probe-bind-address=0",
		"--pprof-bind-address=" + e.pprof,
		// Only agents whose card says they push are given the receiver.
		"--push-listen=" + e.push, "--push-url=http://" + e.push,
		fmt.Sprintf("--kube-api-qps=%g", e.sz.QPS), fmt.Sprintf("--kube-api-burst=%d", e.sz.Burst),
	}
	op, err := cluster.StartProcess(cluster.ProcessOptions{
		Name: "operator", Path: filepath.Join(e.root, "bin", "manager"), Args: args,
		Env:     append(append([]string{"KUBECONFIG=" + e.cluster.Kubeconfig()}, e.sz.OperatorEnv...), env...),
		LogPath: filepath.Join(t.TempDir(), "operator.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.operator = op
	t.Cleanup(func() {
		// An operator stuck on an agent that never answers may not stop in
		// time; it is killed then, which is fine here.
		_ = op.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("operator log (last lines):\n%s", cluster.Tail(op.Log(), 40))
		}
	})
}

// freeAddr is a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// profile saves one of the operator's profiles (e.g. "profile?seconds=60",
// "heap") as name in the output folder; a failure is only logged, since
// the numbers do not depend on it.
func (e *env) profile(query, name string) {
	resp, err := http.Get("http://" + e.pprof + "/debug/pprof/" + query)
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			e.t.Logf("profile %s: %s: %s", name, resp.Status, msg)
			return
		}
		var f *os.File
		if f, err = os.Create(filepath.Join(e.out, name)); err == nil {
			_, err = io.Copy(f, resp.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		e.t.Logf("profile %s: %v", name, err)
	}
}

// floorCRD is a trivial custom resource with a status subresource: what a
// plain client creates and updates once for the throughput floor.
func floorCRD() *apiextensionsv1.CustomResourceDefinition {
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "benchitems.bench.tether.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.tether.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "benchitems", Singular: "benchitem",
				Kind: "BenchItem", ListKind: "BenchItemList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": open, "status": open},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// tenant makes a namespace with an Agent named "agent" for url and waits
// until the operator has read its card.
func (e *env) tenant(prefix, url string, mutate func(*v1alpha1.AgentSpec)) string {
	t := e.t
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-" + prefix + "-"}}
	if err := e.kube.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "agent"}, Spec: v1alpha1.AgentSpec{URL: url}}
	if mutate != nil {
		mutate(&a.Spec)
	}
	if err := e.kube.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	e.waitUntil("the operator reads the card of "+ns.Name+"/agent", time.Minute, func() bool {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")
	})
	return ns.Name
}

// delegation is a Delegation to the namespace's Agent whose text carries
// its name (so the agent can tell which one a send is for) and the mode.
func delegation(ns, name, mode string) *v1alpha1.Delegation {
	return &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"},
			Message: &v1alpha1.Message{Text: mode + " id=" + name}},
	}
}

// createAll creates the objects from 64 goroutines at once and returns
// when every create has been answered.
func (e *env) createAll(objs []client.Object) {
	e.parallel(len(objs), func(i int) error { return e.kube.Create(context.Background(), objs[i]) })
}

// parallel runs do(0..n-1) on 64 goroutines; the first error fails the run.
func (e *env) parallel(n int, do func(i int) error) {
	e.t.Helper()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range min(64, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					errOnce.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		e.t.Fatal(first)
	}
}

// waitUntil polls done until it holds; it fails the run after limit.
func (e *env) waitUntil(what string, limit time.Duration, done func() bool) {
	e.t.Helper()
	if !e.tryUntil(limit, done) {
		e.t.Fatalf("timed out after %s waiting until %s", limit, what)
	}
}

// tryUntil polls done until it holds or limit passes; false on timeout.
func (e *env) tryUntil(limit time.Duration, done func() bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, limit, true,
		func(context.Context) (bool, error) {
			if e.operator != nil && e.operator.Exited() {
				return false, fmt.Errorf("the operator exited:\n%s", cluster.Tail(e.operator.Log(), 30))
			}
			return done(), nil
		})
	if err != nil && e.operator != nil && e.operator.Exited() {
		e.t.Fatal(err)
	}
	return err == nil
}

// deleteAll deletes the Delegations of a namespace one by one (so each
// delete is one counted request) and waits until they are gone.
func (e *env) deleteAll(ns string) {
	names := e.seen.names(ns)
	e.parallel(len(names), func(i int) error {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]}}
		return client.IgnoreNotFound(e.kube.Delete(context.Background(), d))
	})
	if !e.tryUntil(e.sz.Wait, func() bool { return e.seen.count(ns, nil) == 0 }) {
		e.t.Logf("%d Delegations of %s still there after %s", e.seen.count(ns, nil), ns, e.sz.Wait)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
