/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/pkg/agentkit"
)

const (
	tokens = "tokens"
	// kitSweep is how often the kit agents look for lapsed leases.
	kitSweep = 100 * time.Millisecond
	// kitMaxTTL is the longest lease the kit agents grant.
	kitMaxTTL = 5 * time.Second
)

// kitAgent serves an executor with agentkit (leases and budgets) on
// loopback and records every A2A call it receives. Restart replaces the
// server behind the same address with a fresh one that knows no tasks.
type kitAgent struct {
	t    *testing.T
	hs   *httptest.Server
	exec a2asrv.AgentExecutor
	opts []agentkit.Option

	mu    sync.Mutex
	srv   *agentkit.Server
	calls []kitCall
	// cardFilter, when set, changes the card as it leaves the agent.
	cardFilter func([]byte) []byte
}

// kitCall is one JSON-RPC call the agent received.
type kitCall struct {
	At     time.Time
	Method string
	// TaskID is params.id, or the task a message continues.
	TaskID string
	// Extensions is the A2A-Extensions request header.
	Extensions string
	// Delegation is "namespace/name" from a SendMessage's metadata.
	Delegation string
	// Budget is the meters a SendMessage granted; nil when none.
	Budget map[string]int64
}

// Renews reports whether the call renews a lease: GetTask with the lease
// extension activated.
func (c kitCall) Renews() bool {
	return c.Method == "GetTask" && strings.Contains(c.Extensions, tethera2a.LeaseExtensionURI)
}

// kitWorker is the sample worker the tests serve: by default one step of
// 10 tokens; message words (forever, steps=, spend=, ...) change that.
func kitWorker() sample.Worker {
	return sample.Worker{Name: "kit-worker", Steps: 1, Delay: 10 * time.Millisecond, Spend: 10, Meter: tokens}
}

// newKitWorker serves kitWorker with leases up to kitMaxTTL, swept every kitSweep.
func newKitWorker(t *testing.T, opts ...agentkit.Option) *kitAgent {
	return newKitAgent(t, kitWorker(), opts...)
}

func newKitAgent(t *testing.T, exec a2asrv.AgentExecutor, opts ...agentkit.Option) *kitAgent {
	t.Helper()
	ka := &kitAgent{t: t, exec: exec, opts: append([]agentkit.Option{
		agentkit.WithSweepInterval(kitSweep),
		agentkit.WithMaxLeaseTTL(kitMaxTTL),
		agentkit.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, opts...)}
	// The address comes first: the kit proves claims only for Delegations
	// sent to its own origin.
	ka.hs = httptest.NewUnstartedServer(http.HandlerFunc(ka.serve))
	ka.hs.Start()
	ka.opts = append(ka.opts, agentkit.WithOrigins(ka.hs.URL))
	ka.mu.Lock()
	ka.srv = ka.newServer()
	ka.mu.Unlock()
	t.Cleanup(ka.Close)
	return ka
}

func (ka *kitAgent) newServer() *agentkit.Server {
	return agentkit.NewServer(&a2a.AgentCard{Name: "kit-agent", Description: "test agent on agentkit", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}, ka.exec, ka.opts...)
}

func (ka *kitAgent) URL() string { return ka.hs.URL }

// Close stops serving: from now on the agent is unreachable. Tasks still
// running are cancelled, so no execution outlives the test.
func (ka *kitAgent) Close() {
	ka.hs.Close()
	srv := ka.server()
	stopAll(srv)
	srv.Close()
}

// stopAll cancels the tasks of a server that are not terminal.
func stopAll(srv *agentkit.Server) {
	ctx := context.Background()
	token := ""
	for {
		resp, err := srv.RequestHandler.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 100, PageToken: token})
		if err != nil {
			return
		}
		for _, t := range resp.Tasks {
			if !t.Status.State.Terminal() {
				_, _ = srv.RequestHandler.CancelTask(ctx, &a2a.CancelTaskRequest{ID: t.ID})
			}
		}
		if token = resp.NextPageToken; token == "" {
			return
		}
	}
}

func (ka *kitAgent) server() *agentkit.Server {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	return ka.srv
}

// Restart serves a new agentkit server with an empty task store on the same
// address, as an agent restarted without persistence. The old server's
// tasks are cancelled so their executions end.
func (ka *kitAgent) Restart() {
	ka.mu.Lock()
	old := ka.srv
	ka.srv = ka.newServer()
	ka.mu.Unlock()
	stopAll(old)
	old.Close()
}

// Task reads a task from the agent's own handler (no lease renewal).
func (ka *kitAgent) Task(id string) (*a2a.Task, error) {
	return ka.server().RequestHandler.GetTask(context.Background(), &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
}

// TaskState is the task's state at the agent, "" when it cannot be read.
func (ka *kitAgent) TaskState(id string) a2a.TaskState {
	t, err := ka.Task(id)
	if err != nil {
		return ""
	}
	return t.Status.State
}

func (ka *kitAgent) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		ka.record(r, body)
	}
	ka.mu.Lock()
	filter := ka.cardFilter
	ka.mu.Unlock()
	if filter != nil && r.URL.Path == a2asrv.WellKnownAgentCardPath {
		rec := httptest.NewRecorder()
		ka.server().ServeHTTP(rec, r)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(filter(rec.Body.Bytes()))
		return
	}
	ka.server().ServeHTTP(w, r)
}

// SetCardFilter changes the card the agent serves from now on (nil: as it is).
func (ka *kitAgent) SetCardFilter(f func([]byte) []byte) {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	ka.cardFilter = f
}

func (ka *kitAgent) record(r *http.Request, body []byte) {
	type budget struct {
		Meters map[string]int64 `json:"meters"`
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			ID       string         `json:"id"`
			Metadata map[string]any `json:"metadata"`
			Message  struct {
				TaskID   string         `json:"taskId"`
				Metadata map[string]any `json:"metadata"`
			} `json:"message"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	c := kitCall{
		At: time.Now(), Method: req.Method, TaskID: req.Params.ID,
		Extensions: strings.Join(r.Header.Values(a2a.SvcParamExtensions), ","),
	}
	if req.Method == "SendMessage" {
		c.TaskID = req.Params.Message.TaskID
		md := req.Params.Message.Metadata
		if md == nil {
			md = req.Params.Metadata
		}
		c.Delegation, _ = md[tethera2a.DelegationMetadataKey].(string)
		if raw, ok := md[tethera2a.BudgetExtensionURI]; ok {
			var b budget
			if data, err := json.Marshal(raw); err == nil && json.Unmarshal(data, &b) == nil {
				c.Budget = b.Meters
				if c.Budget == nil {
					c.Budget = map[string]int64{}
				}
			}
		}
	}
	ka.mu.Lock()
	ka.calls = append(ka.calls, c)
	ka.mu.Unlock()
}

// Calls returns the recorded calls matching keep (all when nil).
func (ka *kitAgent) Calls(keep func(kitCall) bool) []kitCall {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	var out []kitCall
	for _, c := range ka.calls {
		if keep == nil || keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// Renewals are the lease renewals of one task.
func (ka *kitAgent) Renewals(taskID string) []kitCall {
	return ka.Calls(func(c kitCall) bool { return c.Renews() && c.TaskID == taskID })
}

// Sends are the SendMessage calls made for one Delegation ("" for all).
func (ka *kitAgent) Sends(ns, name string) []kitCall {
	return ka.Calls(func(c kitCall) bool {
		return c.Method == "SendMessage" && (name == "" || c.Delegation == ns+"/"+name)
	})
}

// Cancelled reports whether CancelTask was received for the task.
func (ka *kitAgent) Cancelled(taskID string) bool {
	return len(ka.Calls(func(c kitCall) bool { return c.Method == "CancelTask" && c.TaskID == taskID })) > 0
}

// Helpers for the tests on kit agents.

func pollEvery(d time.Duration) func(*v1alpha1.Agent) {
	return func(a *v1alpha1.Agent) { a.Spec.PollInterval = &metav1.Duration{Duration: d} }
}

// waitAgentReady waits until the operator read the Agent's card.
func (e *env) waitAgentReady(name string) *v1alpha1.Agent {
	e.t.Helper()
	a := &v1alpha1.Agent{}
	e.g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, a)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")).To(BeTrue())
	}, eventually, tick).Should(Succeed())
	return a
}

// kitTask is a Delegation to the named Agent.
func (e *env) kitTask(name, agent, text string, mutate ...func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
	d := e.task(name, text, mutate...)
	d.Spec.AgentRef.Name = agent
	return d
}

// group is a Delegation without agent that holds a budget for its children.
func (e *env) group(name string, meters v1alpha1.Meters) *v1alpha1.Delegation {
	return &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.DelegationSpec{
		Budget: &v1alpha1.BudgetSpec{Meters: meters},
	}}
}

func withBudget(meters v1alpha1.Meters) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.Budget = &v1alpha1.BudgetSpec{Meters: meters} }
}

func withLease(ttl time.Duration) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}} }
}

// ledger is a Delegation's budget status, never nil.
func ledger(d *v1alpha1.Delegation) v1alpha1.BudgetStatus {
	if d.Status.Budget == nil {
		return v1alpha1.BudgetStatus{}
	}
	return *d.Status.Budget
}

// expectExactLedger checks granted = spent + reserved + left per meter, and
// that reserved is the sum of the reservation entries.
func expectExactLedger(g Gomega, b v1alpha1.BudgetStatus) {
	sum := v1alpha1.Meters{}
	for _, r := range b.Reservations {
		for m, n := range r.Meters {
			sum[m] += n
		}
	}
	for m, granted := range b.Granted {
		g.Expect(b.Reserved[m]).To(Equal(sum[m]), "reserved %s is the sum of the entries", m)
		g.Expect(b.Spent[m]).To(Equal(b.Reported[m]+b.Charged[m]), "spent %s = reported + charged", m)
		g.Expect(b.Spent[m]+b.Reserved[m]+b.Left[m]).To(Equal(granted), "granted %s = spent + reserved + left", m)
	}
}
