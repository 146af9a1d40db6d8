/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/test/agentcalls"
	"github.com/tether-dev/tether/test/cluster"
)

// nodeAgent is the js-echo agent (examples/agents/js-echo: the official A2A
// JS SDK's DefaultRequestHandler, InMemoryTaskStore and JSON-RPC handler,
// nothing of tether's) as one Node process: as slow as a single-process
// Node server is, which is what many real agents are. A recording proxy in
// front of it notes when the agent answered each call, so a renewal counts
// when the agent has it, and which reads the operator gave up on before the
// agent answered. The agent writes the proxy's URL into its card, so every
// call passes the proxy. Texts starting "wait" run until cancelled; other
// texts complete at once with an echo.
type nodeAgent struct {
	process *cluster.Process
	proxy   *httptest.Server
	forward *httputil.ReverseProxy

	mu       sync.Mutex
	started  map[string]time.Time     // task id → the send's answer
	renewals map[string][]time.Time   // task id → answered GetTask with the lease extension
	reads    []time.Time              // every GetTask's arrival
	cut      []time.Time              // GetTasks the caller gave up on before the agent answered
	methods  map[string]int           // calls by JSON-RPC method
	took     map[string]time.Duration // and the time the agent took for them
}

// jsEchoDir is the agent's folder in the repository.
func jsEchoDir(root string) string { return filepath.Join(root, "examples", "agents", "js-echo") }

// startNodeAgent installs the agent's locked dependencies when they are
// missing (make test and make bench install them first) and starts it.
func startNodeAgent(ctx context.Context, root, logDir string) (*nodeAgent, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is not installed (the JS SDK agent needs Node.js 20 or later)")
	}
	dir := jsEchoDir(root)
	if err := installNodeModules(ctx, dir); err != nil {
		return nil, err
	}
	a := &nodeAgent{started: map[string]time.Time{}, renewals: map[string][]time.Time{}, methods: map[string]int{},
		took: map[string]time.Duration{}}
	a.proxy = httptest.NewServer(http.HandlerFunc(a.serve))
	p, err := cluster.StartProcess(cluster.ProcessOptions{
		Name: "js-echo", Path: node,
		Args:    []string{filepath.Join(dir, "agent.js"), "--protocol=1.0", "--public-url=" + a.proxy.URL},
		LogPath: filepath.Join(logDir, "js-echo.log"),
	})
	if err != nil {
		a.proxy.Close()
		return nil, err
	}
	a.process = p
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := p.WaitFor(wctx, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		a.Close()
		return nil, err
	}
	target, err := url.Parse(m[1])
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("js-echo printed a bad address: %w", err)
	}
	// Connections to the agent are kept, as the operator keeps its own: a
	// new connection per call would slow the agent down further.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 1024, 1024
	transport.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	a.forward = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport, ErrorLog: nil, ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}}
	return a, nil
}

// installNodeModules runs `npm ci` in dir when node_modules is missing or
// older than the lock file (npm writes node_modules/.package-lock.json on
// every install).
func installNodeModules(ctx context.Context, dir string) error {
	if installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
		if err == nil && !lock.ModTime().After(installed.ModTime()) {
			return nil
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm is not installed (needed to install the JS SDK agent)")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// URL is the agent's base URL as the operator sees it (the proxy).
func (a *nodeAgent) URL() string { return a.proxy.URL }

// Close stops the agent before its proxy: streams through the proxy end
// with it, and httptest's Close waits for every active request.
func (a *nodeAgent) Close() {
	if a.process != nil {
		_ = a.process.Stop(5 * time.Second)
	}
	a.proxy.CloseClientConnections()
	a.proxy.Close()
}

// nodeCall is the part of a JSON-RPC request the recorder reads.
type nodeCall struct {
	Method string `json:"method"`
	Params struct {
		ID string `json:"id"`
	} `json:"params"`
}

func (a *nodeAgent) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		a.forward.ServeHTTP(w, r)
		return
	}
	arrived := time.Now()
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var c nodeCall
	_ = json.Unmarshal(body, &c)
	rec := &recorder{ResponseWriter: w, keep: c.Method == "SendMessage"}
	a.forward.ServeHTTP(rec, r)
	answered := time.Now()
	gaveUp := r.Context().Err() != nil
	ok := rec.status == http.StatusOK && !gaveUp && bytes.Contains(rec.head, []byte(`"result"`))

	a.mu.Lock()
	defer a.mu.Unlock()
	a.methods[c.Method]++
	a.took[c.Method] += answered.Sub(arrived)
	switch c.Method {
	case "GetTask":
		a.reads = append(a.reads, arrived)
		if gaveUp {
			a.cut = append(a.cut, answered)
		}
		if ok && agentcalls.LeaseActivated(r) {
			a.renewals[c.Params.ID] = append(a.renewals[c.Params.ID], answered)
		}
	case "SendMessage":
		var res struct {
			Result struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"result"`
		}
		if ok && json.Unmarshal(rec.body.Bytes(), &res) == nil && res.Result.Task.ID != "" {
			if _, seen := a.started[res.Result.Task.ID]; !seen {
				a.started[res.Result.Task.ID] = answered
			}
		}
	}
}

// recorder passes a response through and keeps its status, its first bytes
// (to tell a result from an error) and, when keep is set, all of it.
type recorder struct {
	http.ResponseWriter
	keep   bool
	status int
	head   []byte
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if len(r.head) < 256 {
		r.head = append(r.head, p[:min(len(p), 256-len(r.head))]...)
	}
	if r.keep && r.body.Len() < 1<<20 {
		r.body.Write(p)
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets the proxy flush a stream (SubscribeToTask) as it comes.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// leases copies what the lease analysis needs.
func (a *nodeAgent) leases() (map[string]time.Time, map[string][]time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	renewals := make(map[string][]time.Time, len(a.renewals))
	for id, at := range a.renewals {
		renewals[id] = append([]time.Time(nil), at...)
	}
	return maps.Clone(a.started), renewals
}

// readsBetween counts the GetTasks that arrived in [from, to), and those
// the caller gave up on (its deadline passed before the agent answered).
func (a *nodeAgent) readsBetween(from, to time.Time) (asked, cut int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	in := func(at time.Time) bool { return !at.Before(from) && at.Before(to) }
	for _, at := range a.reads {
		if in(at) {
			asked++
		}
	}
	for _, at := range a.cut {
		if in(at) {
			cut++
		}
	}
	return asked, cut
}

// calls says how many calls of each method the agent got so far and how
// long it took for one on average.
func (a *nodeAgent) calls() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, m := range slices.Sorted(maps.Keys(a.methods)) {
		n := a.methods[m]
		fmt.Fprintf(&b, "%s %d (%s each) ", m, n, (a.took[m] / time.Duration(n)).Round(time.Millisecond))
	}
	return strings.TrimSpace(b.String())
}
