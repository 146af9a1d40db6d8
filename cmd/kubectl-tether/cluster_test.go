/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

// The tests in this file run the plugin's entry point, run(), the way main
// does, with --kubeconfig and --namespace, against a real kube-apiserver with
// tether's CRDs installed. No operator runs: each test writes the status it
// needs through the status subresource, so the API server validates it.

// apiServer is one kube-apiserver and etcd for the package, started by the
// first test that needs it and stopped by TestMain.
var apiServer struct {
	once       sync.Once
	err        error
	env        *envtest.Environment
	config     *rest.Config
	client     client.Client
	dir        string
	kubeconfig string // admin, no namespace in the context
}

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	code := m.Run()
	if apiServer.env != nil {
		if err := apiServer.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}
	if apiServer.dir != "" {
		_ = os.RemoveAll(apiServer.dir)
	}
	os.Exit(code)
}

// startAPIServer starts the API server once; the binaries come from
// KUBEBUILDER_ASSETS, or are built by hack/control-plane.sh.
func startAPIServer(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	apiServer.once.Do(func() { apiServer.err = bootAPIServer() })
	if apiServer.err != nil {
		t.Fatal(apiServer.err)
	}
}

func bootAPIServer() error {
	bin, err := cluster.BinDir("")
	if err != nil {
		return err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		return fmt.Errorf("starting the API server: %w", err)
	}
	apiServer.env, apiServer.config = te, cfg
	if apiServer.dir, err = os.MkdirTemp("", "kubectl-tether-test-"); err != nil {
		return err
	}
	apiServer.kubeconfig = filepath.Join(apiServer.dir, "admin.kubeconfig")
	if err := os.WriteFile(apiServer.kubeconfig, te.KubeConfig, 0o600); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	apiServer.client, err = client.New(cfg, client.Options{Scheme: scheme})
	return err
}

// plugin is what one invocation printed and returned.
type plugin struct {
	code           int
	stdout, stderr string
}

// kubectlTether runs the plugin as `kubectl tether ARGS --kubeconfig ... --namespace ns`.
func kubectlTether(ns string, args ...string) plugin {
	return runPlugin(slices.Concat(args, []string{"--kubeconfig", apiServer.kubeconfig, "--namespace", ns}), nil)
}

// runPlugin calls the entry point main uses; stdout, when given, receives the
// output instead of a buffer (it is read back afterwards).
func runPlugin(args []string, stdout *os.File) plugin {
	var out, errOut bytes.Buffer
	var w io.Writer = &out
	if stdout != nil {
		w = stdout
	}
	code := run(context.Background(), args, w, &errOut)
	if stdout != nil {
		data, err := os.ReadFile(stdout.Name())
		if err != nil {
			panic(err)
		}
		out.Write(data)
	}
	return plugin{code: code, stdout: out.String(), stderr: errOut.String()}
}

// scene is a delegation tree in a namespace of its own: the group root
// (budget with a reservation for child), child running a task under a lease,
// and grandchild, which succeeded with a result.
type scene struct {
	ns                      string
	root, child, grandchild *v1alpha1.Delegation
}

// at is a fixed time on the scene's clock; outputs print it with how long ago
// it was, which the tests normalize.
func at(hhmmss string) *metav1.Time {
	t, err := time.Parse(time.RFC3339, "2026-11-29T"+hhmmss+"Z")
	if err != nil {
		panic(err)
	}
	mt := metav1.NewTime(t)
	return &mt
}

func newScene(t *testing.T) *scene {
	t.Helper()
	startAPIServer(t)
	ctx := context.Background()
	c := apiServer.client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns.Name} }
	s := &scene{
		ns: ns.Name,
		root: &v1alpha1.Delegation{ObjectMeta: meta("root"), Spec: v1alpha1.DelegationSpec{
			Budget: &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 10000, "calls": 20}},
		}},
		child: &v1alpha1.Delegation{ObjectMeta: meta("child"), Spec: v1alpha1.DelegationSpec{
			AgentRef:  &v1alpha1.AgentRef{Name: "researcher"},
			ParentRef: &v1alpha1.LocalRef{Name: "root"},
			Message:   &v1alpha1.Message{Text: "find three sources on tidal power"},
			Lease:     &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}},
			Budget:    &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 4000, "calls": 5}},
		}},
		grandchild: &v1alpha1.Delegation{ObjectMeta: meta("grandchild"), Spec: v1alpha1.DelegationSpec{
			AgentRef:  &v1alpha1.AgentRef{Name: "writer"},
			ParentRef: &v1alpha1.LocalRef{Name: "child"},
			Message:   &v1alpha1.Message{Text: "summarize the sources"},
			Budget:    &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 1000, "calls": 1}},
		}},
	}
	for _, d := range []*v1alpha1.Delegation{s.root, s.child, s.grandchild} {
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	// granted = spent + reserved + left on every ledger. An earlier child of
	// root settled and is gone (its charge stays); grandchild's spend was
	// charged to child when it settled.
	s.root.Status = v1alpha1.DelegationStatus{
		Phase:     v1alpha1.PhaseRunning,
		Outcome:   &v1alpha1.Outcome{Reason: "WaitingForChildren"},
		StartTime: at("20:00:00"),
		Children:  &v1alpha1.ChildCounts{Active: 1, Succeeded: 1},
		Budget: &v1alpha1.BudgetStatus{
			Granted:  v1alpha1.Meters{"tokens": 10000, "calls": 20},
			Reserved: v1alpha1.Meters{"tokens": 4000, "calls": 5},
			Charged:  v1alpha1.Meters{"tokens": 1500, "calls": 2},
			Spent:    v1alpha1.Meters{"tokens": 1500, "calls": 2},
			Left:     v1alpha1.Meters{"tokens": 4500, "calls": 13},
			Reservations: []v1alpha1.Reservation{
				{Child: "child", UID: string(s.child.UID), Meters: v1alpha1.Meters{"tokens": 4000, "calls": 5}},
			},
		},
	}
	s.child.Status = v1alpha1.DelegationStatus{
		Phase:       v1alpha1.PhaseRunning,
		TaskID:      "task-7c1f",
		ContextID:   "ctx-1",
		RemoteState: "working",
		Outcome:     &v1alpha1.Outcome{Reason: "Working"},
		StartTime:   at("20:00:05"),
		Children:    &v1alpha1.ChildCounts{Succeeded: 1},
		Lease: &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: 30 * time.Second},
			Granted: true, GrantedUntil: at("20:00:35")},
		Budget: &v1alpha1.BudgetStatus{
			Granted:  v1alpha1.Meters{"tokens": 4000, "calls": 5},
			Reserved: v1alpha1.Meters{"tokens": 0, "calls": 0},
			Reported: v1alpha1.Meters{"tokens": 900, "calls": 1},
			Charged:  v1alpha1.Meters{"tokens": 300, "calls": 1},
			Spent:    v1alpha1.Meters{"tokens": 1200, "calls": 2},
			Left:     v1alpha1.Meters{"tokens": 2800, "calls": 3},
		},
	}
	s.grandchild.Status = v1alpha1.DelegationStatus{
		Phase:          v1alpha1.PhaseSucceeded,
		TaskID:         "task-9d2e",
		ContextID:      "ctx-1",
		RemoteState:    "completed",
		Outcome:        &v1alpha1.Outcome{Reason: "Completed"},
		StartTime:      at("20:01:00"),
		CompletionTime: at("20:03:00"),
		Result: &v1alpha1.Result{
			Text: "Three sources agree: tidal power is predictable but site-limited.",
			Artifacts: []v1alpha1.Artifact{
				{Name: "summary.md", MediaType: "text/markdown", Text: "# Tidal power\n\n- predictable\n- few sites\n"},
				{Name: "sources", MediaType: "text/uri-list", URL: "https://example.com/tidal/sources.txt"},
			},
		},
		Budget: &v1alpha1.BudgetStatus{
			Granted:  v1alpha1.Meters{"tokens": 1000, "calls": 1},
			Reported: v1alpha1.Meters{"tokens": 300, "calls": 1},
			Spent:    v1alpha1.Meters{"tokens": 300, "calls": 1},
			Left:     v1alpha1.Meters{"tokens": 700, "calls": 0},
		},
	}
	for _, d := range []*v1alpha1.Delegation{s.root, s.child, s.grandchild} {
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatalf("writing the status of %s: %v", d.Name, err)
		}
	}
	return s
}

// get reads a Delegation of the scene back from the API server.
func (s *scene) get(t *testing.T, name string) *v1alpha1.Delegation {
	t.Helper()
	d := &v1alpha1.Delegation{}
	if err := apiServer.client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	// relative is the "(5m ago)" / "(in 5m)" after a timestamp.
	relative = regexp.MustCompile(`\((in [^)]+|[^)]+ ago)\)`)
	// ageColumn is the AGE cell that ends each tree row.
	ageColumn = regexp.MustCompile(`(?m)   [0-9][0-9a-z]*$`)
)

func TestClusterStatusIsValidatedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	d := s.get(t, "child")
	d.Status.Phase = "Finished"
	err := apiServer.client.Status().Update(context.Background(), d)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an unknown phase is refused: %v", err)
}

func TestClusterTree(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	// Not colour-blind by configuration: only the missing terminal turns colour off.
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = out.Close() }()

	res := runPlugin([]string{"tree", "root", "--kubeconfig", apiServer.kubeconfig, "--namespace", s.ns}, out)
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(res.stdout).NotTo(ContainSubstring("\x1b"), "no colour when stdout is not a terminal")
	g.Expect(ageColumn.ReplaceAllString(res.stdout, "   <age>")).To(Equal(
		`NAME                 PHASE       REASON               AGENT        TASK        BUDGET LEFT/SPENT             AGE
root                 Running     WaitingForChildren   (group)      -           calls=13/2,tokens=4500/1500   <age>
└── child            Running     Working              researcher   task-7c1f   calls=3/2,tokens=2800/1200    <age>
    └── grandchild   Succeeded   Completed            writer       task-9d2e   calls=0/1,tokens=700/300      <age>
`))

	// Without a name: every tree in the namespace, here the same one.
	all := kubectlTether(s.ns, "tree")
	g.Expect(all.code).To(Equal(0), all.stderr)
	g.Expect(ageColumn.ReplaceAllString(all.stdout, "   <age>")).To(Equal(ageColumn.ReplaceAllString(res.stdout, "   <age>")),
		"the same tree (ages may have moved on by a second)")
}

func TestClusterDescribe(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)

	res := kubectlTether(s.ns, "describe", "child")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(relative.ReplaceAllString(res.stdout, "(rel)")).To(Equal(`Name:           child
Namespace:      ` + s.ns + `
Agent:          researcher
Parent:         root
Phase:          Running
Reason:         Working
Task:           task-7c1f
Remote state:   working
Started:        2026-11-29T20:00:05Z (rel)
Children:       0 active, 1 succeeded, 0 failed, 0 canceled
Lease:
  TTL:            30s
  Granted:        true
  Granted until:  2026-11-29T20:00:35Z (rel)
Budget:
  METER    GRANTED   RESERVED   SPENT   LEFT
  calls    5         0          2       3
  tokens   4000      0          1200    2800
`))

	res = kubectlTether(s.ns, "describe", "root")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(ContainSubstring(`Agent:          (group)
Parent:         -
Phase:          Running
Reason:         WaitingForChildren
Task:           -
`))
	g.Expect(res.stdout).To(HaveSuffix(`Lease:          none
Budget:
  METER    GRANTED   RESERVED   SPENT   LEFT
  calls    20        5          2       13
  tokens   10000     4000       1500    4500
Reservations:
  CHILD   RESERVED
  child   calls=5,tokens=4000
`))
}

func TestClusterResult(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)

	res := kubectlTether(s.ns, "result", "grandchild")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stderr).To(BeEmpty())
	g.Expect(res.stdout).To(Equal(`Three sources agree: tidal power is predictable but site-limited.
--- artifact 1: summary.md (text/markdown)
# Tidal power

- predictable
- few sites
--- artifact 2: sources (text/uri-list)
https://example.com/tidal/sources.txt
`))

	res = kubectlTether(s.ns, "result", "child")
	g.Expect(res.code).To(Equal(1))
	g.Expect(res.stdout).To(BeEmpty())
	g.Expect(res.stderr).To(Equal("error: delegation \"child\" has no result (phase Running)\n"))
}

func TestClusterReply(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)

	res := kubectlTether(s.ns, "reply", "child", "blue")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation \"child\" is Running: reply 1 is sent when the agent asks for input\n"))
	g.Expect(s.get(t, "child").Spec.Replies).To(Equal(replies("blue")))
}

// TestClusterRacingReplies makes two replies read the same resourceVersion
// before either writes: the API server refuses the second write, which reads
// again and appends to the fresh list, so neither reply is lost.
func TestClusterRacingReplies(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	gate := newRaceGate(t, s.ns, "child", 2)

	var wg sync.WaitGroup
	results := make([]plugin, 2)
	for i, text := range []string{"red", "green"} {
		wg.Go(func() {
			// The namespace comes from the kubeconfig's context this time.
			results[i] = runPlugin([]string{"reply", "child", text, "--kubeconfig", gate.kubeconfig}, nil)
		})
	}
	wg.Wait()
	for _, res := range results {
		g.Expect(res.code).To(Equal(0), res.stderr)
		g.Expect(res.stdout).To(MatchRegexp(`^delegation "child" is Running: reply [12] is sent when the agent asks for input\n$`))
	}
	g.Expect(gate.patchCodes()).To(ConsistOf(http.StatusOK, http.StatusConflict, http.StatusOK),
		"both replies patched from the same resourceVersion, one was refused and retried")
	g.Expect(s.get(t, "child").Spec.Replies).To(ConsistOf(replies("red", "green")), "each reply exactly once")
}

// raceGate is a proxy to the API server that holds every PATCH of one
// Delegation until it served `readers` GETs of it, and records each PATCH's
// status code.
type raceGate struct {
	kubeconfig string
	mu         sync.Mutex
	gets       int
	open       chan struct{}
	patches    []int
}

func newRaceGate(t *testing.T, ns, name string, readers int) *raceGate {
	t.Helper()
	gate := &raceGate{open: make(chan struct{})}
	target, err := url.Parse(apiServer.config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(apiServer.config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		ModifyResponse: func(r *http.Response) error {
			if r.Request.Method == http.MethodPatch {
				gate.mu.Lock()
				gate.patches = append(gate.patches, r.StatusCode)
				gate.mu.Unlock()
			}
			return nil
		},
	}
	path := "/apis/" + v1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/delegations/" + name
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && r.Method == http.MethodPatch {
			select {
			case <-gate.open:
			case <-time.After(5 * time.Second): // the patchCodes check then fails
			}
		}
		proxy.ServeHTTP(w, r)
		if r.URL.Path == path && r.Method == http.MethodGet {
			gate.mu.Lock()
			if gate.gets++; gate.gets == readers {
				close(gate.open)
			}
			gate.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gate"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["gate"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["gate"] = &clientcmdapi.Context{Cluster: "gate", AuthInfo: "gate", Namespace: ns}
	cfg.CurrentContext = "gate"
	gate.kubeconfig = filepath.Join(t.TempDir(), "gate.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, gate.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return gate
}

func (g *raceGate) patchCodes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.patches...)
}

func TestClusterReplyRefusals(t *testing.T) {
	s := newScene(t)
	tests := []struct {
		name, target, wantErr string
		before                []string
	}{
		{name: "a group", target: "root", wantErr: `delegation "root" is a group: replies go to one of its tasks`},
		{name: "a settled task", target: "grandchild", wantErr: `delegation "grandchild" is Succeeded: a reply would never be sent`},
		// Still Running, but the operator cancels it before sending anything.
		{name: "a task being cancelled", target: "child", before: []string{"cancel", "child"},
			wantErr: `delegation "child" is being cancelled: a reply would never be sent`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.before != nil {
				res := kubectlTether(s.ns, tc.before...)
				g.Expect(res.code).To(Equal(0), res.stderr)
			}
			before := s.get(t, tc.target)
			res := kubectlTether(s.ns, "reply", tc.target, "blue")
			g.Expect(res.code).To(Equal(1))
			g.Expect(res.stdout).To(BeEmpty())
			g.Expect(res.stderr).To(Equal("error: " + tc.wantErr + "\n"))
			after := s.get(t, tc.target)
			g.Expect(after.Spec.Replies).To(BeEmpty())
			g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing written")
		})
	}
}

func TestClusterCancel(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)

	res := kubectlTether(s.ns, "cancel", "root")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation \"root\": cancel requested; its task and every Cancel-policy child are cancelled\n"))
	first := s.get(t, "root")
	g.Expect(first.Spec.Cancel).To(BeTrue())
	g.Expect(first.Spec.Budget.Meters).To(HaveKeyWithValue("tokens", int64(10000)), "the rest of the spec is kept")
	g.Expect(first.Status.Phase).To(Equal(v1alpha1.PhaseRunning), "the status is the operator's")

	res = kubectlTether(s.ns, "cancel", "root")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation \"root\": cancel already requested\n"))
	g.Expect(s.get(t, "root").ResourceVersion).To(Equal(first.ResourceVersion), "a second cancel writes nothing")

	res = kubectlTether(s.ns, "cancel", "grandchild")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation \"grandchild\" is already Succeeded; nothing to cancel\n"))
	g.Expect(s.get(t, "grandchild").Spec.Cancel).To(BeFalse())
}

func TestClusterMissingName(t *testing.T) {
	s := newScene(t)
	notFound := `error: delegations.delegation.tether.dev "nope" not found` + "\n"
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"tree", "nope"}, 1, `error: delegation "nope" not found in namespace "` + s.ns + `"` + "\n"},
		{[]string{"describe", "nope"}, 1, notFound},
		{[]string{"result", "nope"}, 1, notFound},
		{[]string{"reply", "nope", "blue"}, 1, notFound},
		{[]string{"cancel", "nope"}, 1, notFound},
		// No name at all: refused before anything is sent, with the usage.
		{[]string{"describe"}, 2, "error: wrong number of arguments for describe\n"},
		{[]string{"cancel"}, 2, "error: wrong number of arguments for cancel\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			res := kubectlTether(s.ns, tc.args...)
			g.Expect(res.code).To(Equal(tc.wantCode))
			g.Expect(res.stdout).To(BeEmpty())
			if tc.wantCode == 2 {
				g.Expect(res.stderr).To(HavePrefix(tc.wantStderr))
				g.Expect(res.stderr).To(ContainSubstring("Usage:"))
			} else {
				g.Expect(res.stderr).To(Equal(tc.wantStderr))
			}
		})
	}
	// Another namespace holds none of the scene's Delegations.
	g := NewWithT(t)
	res := kubectlTether("default", "describe", "child")
	g.Expect(res.code).To(Equal(1))
	g.Expect(res.stderr).To(Equal(`error: delegations.delegation.tether.dev "child" not found` + "\n"))
}
