/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// quietLog discards the agents' logs.
var quietLog = slog.New(slog.DiscardHandler)

// workerAgent is examples/agents/worker: the sample agent on pkg/agentkit.
func workerAgent(t *testing.T, opts ...agentkit.Option) http.Handler {
	w := sample.Worker{Name: "worker", Steps: 3, Delay: 100 * time.Millisecond, Spend: 100, Log: quietLog}
	srv := agentkit.NewServer(sample.WorkerCard(w.Name), w,
		append([]agentkit.Option{agentkit.WithLogger(quietLog), agentkit.WithSweepInterval(200 * time.Millisecond)}, opts...)...)
	t.Cleanup(srv.Close)
	return srv
}

func serve(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func runCheck(t *testing.T, g Gomega, opts Options) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if opts.Within == 0 {
		opts.Within = 10 * time.Second
	}
	rep, err := Run(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("\n" + table(rep))
	return rep
}

func table(rep *Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%-34s %-6s %-14s %s\n", r.ID, r.Level, r.Status, r.Seen)
	}
	return b.String()
}

func statuses(rep *Report) map[string]Status {
	out := map[string]Status{}
	for _, r := range rep.Results {
		out[r.ID] = r.Status
	}
	return out
}

// conformingAgents must pass every MUST. The TypeScript sample joins this
// table when it lands (an entry starting it and naming what it advertises).
var conformingAgents = []struct {
	name string
	url  func(t *testing.T) string
	// extensions: the card declares lease and budget, so no check may be
	// "not advertised"; without them every extension check must be.
	extensions bool
}{
	{"Go agentkit worker sample", func(t *testing.T) string { return serve(t, workerAgent(t)) }, true},
	{"stock a2a-go default handler", stockAgent, false},
}

func TestCheckerPassesConformingAgents(t *testing.T) {
	for _, tc := range conformingAgents {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			// A ttl of 5s leaves a renewal every 1.7s room on a loaded machine.
			rep := runCheck(t, g, Options{Endpoint: a2a.Endpoint{URL: tc.url(t)}, LeaseTTL: 5 * time.Second})
			g.Expect(rep.Failed(Must)).To(BeEmpty())
			g.Expect(rep.NotRunOf(Must)).To(BeEmpty())
			g.Expect(rep.Verdict.Conformant).To(BeTrue(), rep.Verdict.Reason)
			got := statuses(rep)
			// The worker's card declares streaming, the stock card does not.
			if tc.extensions {
				g.Expect(got).To(HaveKeyWithValue(CheckSubscribe, Pass))
			} else {
				g.Expect(got).To(HaveKeyWithValue(CheckSubscribe, NotAdvertised))
			}
			for _, id := range append(append([]string{}, leaseOrder...), budgetOrder...) {
				if tc.extensions {
					g.Expect(got).To(HaveKeyWithValue(id, Pass), id)
				} else {
					g.Expect(got).To(HaveKeyWithValue(id, NotAdvertised), id)
				}
			}
			for _, id := range []string{CheckCardParses, CheckCardOrigins, CheckCardReachable, CheckGetUnknownTask,
				CheckInputRequired, CheckCancelWorking, CheckCancelFinished, CheckGetHistory, CheckBoundsIDs, CheckBoundsSize, CheckSchemaAnswers} {
				g.Expect(got).To(HaveKeyWithValue(id, Pass), id)
			}
		})
	}
}

// The stock a2a-go handler has no authenticator: its task store refuses
// ListTasks, which the check names (a SHOULD: tether then cannot adopt a
// task whose send answer was lost).
func TestCheckerNamesAnAgentThatCannotList(t *testing.T) {
	g := NewWithT(t)
	rep := runCheck(t, g, Options{Endpoint: a2a.Endpoint{URL: stockAgent(t)}, Groups: []string{GroupList}})
	res, ok := rep.Result(CheckListByContext)
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Status).To(Equal(Fail))
	g.Expect(res.Level).To(Equal(Should))
	g.Expect(res.Seen).To(ContainSubstring("cannot list"))
	// The history rule of a listing the agent does not give is moot, not
	// a MUST left unrun.
	hist, _ := rep.Result(CheckListHistory)
	g.Expect(hist.Status).To(Equal(NotAdvertised), hist.Seen)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// brokenAgents each break one rule of a conforming agent (the worker
// sample); the check must fail and name it.
var brokenAgents = []struct {
	name   string
	want   string // the check that must fail
	level  Level
	groups []string
	opts   []agentkit.Option
	brk    breakage
	// endpoint adjusts the endpoint (e.g. trusts an extra origin).
	endpoint func(t *testing.T, ep *a2a.Endpoint, brk *breakage)
}{
	{name: "card does not parse", want: CheckCardParses, groups: []string{GroupCard},
		brk: breakage{rawCard: `{"name": "half a card", "supportedInterfaces": [`}},
	{name: "interface outside the origins", want: CheckCardOrigins, groups: []string{GroupCard},
		brk: breakage{card: func(card map[string]any, _ string) {
			card["supportedInterfaces"] = append(card["supportedInterfaces"].([]any),
				map[string]any{"url": "http://127.0.0.2:9/a2a", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"})
		}}},
	{name: "interface nobody answers", want: CheckCardReachable, groups: []string{GroupCard},
		endpoint: func(t *testing.T, ep *a2a.Endpoint, brk *breakage) {
			dead := "http://" + closedPort(t)
			ep.AllowedOrigins = append(ep.AllowedOrigins, dead)
			brk.card = func(card map[string]any, _ string) {
				card["supportedInterfaces"] = append(card["supportedInterfaces"].([]any),
					map[string]any{"url": dead + "/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"})
			}
		}},
	{name: "lease params not valid", want: CheckCardExtParams, groups: []string{GroupCard},
		brk: breakage{card: func(card map[string]any, _ string) {
			for _, e := range card["capabilities"].(map[string]any)["extensions"].([]any) {
				if e := e.(map[string]any); e["uri"] == a2a.LeaseExtensionURI {
					e["params"] = map[string]any{"maxTTLSeconds": "an hour"}
				}
			}
		}}},
	{name: "GetTask forgets the task it created", want: CheckSendGetPrefix + "JSONRPC-1.0", groups: []string{GroupCard},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			if c.Method == "GetTask" {
				return map[string]any{"jsonrpc": "2.0", "id": resp["id"], "error": map[string]any{"code": -32001, "message": "task not found"}}
			}
			return resp
		}}},
	{name: "GetTask of an unknown task is an internal error", want: CheckGetUnknownTask, groups: []string{GroupCard},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			if errorCode(resp) == -32001 {
				resp["error"] = map[string]any{"code": -32603, "message": "internal error"}
			}
			return resp
		}}},
	{name: "a reply starts a new task", want: CheckInputRequired, groups: []string{GroupCore},
		brk: breakage{request: func(c *rpcCall) {
			if m := message(c); m != nil {
				delete(m, "taskId")
			}
		}}},
	{name: "CancelTask does not reach the task", want: CheckCancelWorking, groups: []string{GroupCore},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, forward func(*rpcCall) map[string]any) map[string]any {
			return resp
		}, request: func(c *rpcCall) {
			if c.Method == "CancelTask" {
				c.Method = "GetTask"
			}
		}}},
	{name: "CancelTask of a finished task cancels it", want: CheckCancelFinished, groups: []string{GroupCore},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, forward func(*rpcCall) map[string]any) map[string]any {
			if c.Method != "CancelTask" || errorCode(resp) != -32002 {
				return resp
			}
			task := answerTask(&rpcCall{Method: "GetTask"}, forward(&rpcCall{Method: "GetTask", Params: map[string]any{"id": c.Params["id"]}, Header: c.Header, id: c.id}))
			task["status"] = map[string]any{"state": "TASK_STATE_CANCELED"}
			return map[string]any{"jsonrpc": "2.0", "id": resp["id"], "result": task}
		}}},
	{name: "GetTask ignores historyLength", want: CheckGetHistory, groups: []string{GroupCore},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "GetTask" {
				c.Params["historyLength"] = 100
			}
		}}},
	{name: "ListTasks ignores historyLength", want: CheckListHistory, groups: []string{GroupList},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "ListTasks" {
				c.Params["historyLength"] = 100
			}
		}}},
	{name: "ListTasks does not find the task", want: CheckListByContext, level: Should, groups: []string{GroupList},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			if res, ok := resp["result"].(map[string]any); ok && c.Method == "ListTasks" {
				res["tasks"] = []any{}
			}
			return resp
		}}},
	{name: "a ttl out of range is accepted", want: CheckLeaseRefuses, groups: []string{GroupLease},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "SendMessage" {
				dropMeta(c, a2a.LeaseExtensionURI)
			}
		}}},
	{name: "a refused lease starts the task anyway", want: CheckLeaseRefuses, groups: []string{GroupLease},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, forward func(*rpcCall) map[string]any) map[string]any {
			if c.Method == "SendMessage" && errorCode(resp) == -32602 {
				dropMeta(c, a2a.LeaseExtensionURI)
				forward(c)
			}
			return resp
		}}},
	{name: "renewals are not honoured", want: CheckLeaseRenewal, groups: []string{GroupLease},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "GetTask" {
				c.Header.Del("A2A-Extensions")
			}
		}}},
	{name: "a plain GetTask renews", want: CheckLeasePlainGet, groups: []string{GroupLease},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "GetTask" {
				c.Header.Set("A2A-Extensions", a2a.LeaseExtensionURI)
			}
		}}},
	{name: "a lapsed lease does not stop the task", want: CheckLeaseLapse, groups: []string{GroupLease},
		opts: []agentkit.Option{agentkit.WithSweepInterval(time.Hour)}},
	{name: "an invalid grant is accepted", want: CheckBudgetRefuses, groups: []string{GroupBudget},
		brk: breakage{request: func(c *rpcCall) {
			if c.Method == "SendMessage" {
				dropMeta(c, a2a.BudgetExtensionURI)
			}
		}}},
	{name: "no report on the settling update", want: CheckBudgetReport, groups: []string{GroupBudget},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			eachTask(c, resp, func(task map[string]any) {
				delete(taskMeta(task), a2a.BudgetExtensionURI)
				delete(statusMessageMeta(task), a2a.BudgetExtensionURI)
			})
			return resp
		}}},
	{name: "a meter not granted is spent", want: CheckBudgetUngranted, groups: []string{GroupBudget},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			eachTask(c, resp, func(task map[string]any) {
				for _, meta := range []map[string]any{taskMeta(task), statusMessageMeta(task)} {
					if rep, ok := meta[a2a.BudgetExtensionURI].(map[string]any); ok {
						rep["spent"] = map[string]any{"tokens": 7}
					}
				}
			})
			return resp
		}}},
	{name: "the deadline is ignored", want: CheckBudgetDeadline, groups: []string{GroupBudget},
		brk: breakage{request: func(c *rpcCall) {
			if m, ok := message(c)["metadata"].(map[string]any); ok && c.Method == "SendMessage" {
				if g, ok := m[a2a.BudgetExtensionURI].(map[string]any); ok {
					delete(g, "deadline")
				}
			}
		}}},
	{name: "context ids over 256 bytes", want: CheckBoundsIDs, groups: []string{GroupCard, GroupBounds},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			eachTask(c, resp, func(task map[string]any) { task["contextId"] = strings.Repeat("c", 300) })
			return resp
		}}},
	{name: "answers over 1 MiB", want: CheckBoundsSize, groups: []string{GroupCard, GroupBounds},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			eachTask(c, resp, func(task map[string]any) {
				if task["metadata"] == nil {
					task["metadata"] = map[string]any{}
				}
				taskMeta(task)["padding"] = strings.Repeat("x", 2<<20)
			})
			return resp
		}}},
	{name: "lease answers not valid against the schema", want: CheckSchemaAnswers, groups: []string{GroupLease, GroupBounds},
		brk: breakage{response: func(c *rpcCall, resp map[string]any, _ func(*rpcCall) map[string]any) map[string]any {
			eachTask(c, resp, func(task map[string]any) {
				if l, ok := taskMeta(task)[a2a.LeaseExtensionURI].(map[string]any); ok {
					l["expiresAt"] = "soon"
				}
			})
			return resp
		}}},
}

func TestCheckerNamesEachBrokenRule(t *testing.T) {
	for _, tc := range brokenAgents {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			brk := tc.brk
			ep := a2a.Endpoint{}
			if tc.endpoint != nil {
				tc.endpoint(t, &ep, &brk)
			}
			ep.URL = serve(t, brk.wrap(workerAgent(t, tc.opts...)))
			rep := runCheck(t, g, Options{Endpoint: ep, Groups: tc.groups, Within: 4 * time.Second, LeaseTTL: 2 * time.Second})
			res, ok := rep.Result(tc.want)
			g.Expect(ok).To(BeTrue(), "the check %s ran", tc.want)
			g.Expect(res.Status).To(Equal(Fail), res.Seen)
			level := tc.level
			if level == "" {
				level = Must
			}
			g.Expect(res.Level).To(Equal(level))
			if level == Must {
				g.Expect(rep.Failed(Must)).To(ContainElement(HaveField("ID", tc.want)))
			}
		})
	}
}
