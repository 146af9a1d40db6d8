/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/test/cluster"
)

// dropMarker in a message's text makes the proxy lose the agent's answer to
// the first send of that message id: the agent has the task, the operator
// sees a broken connection, as when it stops between the send and its
// status write.
const dropMarker = "[drop]"

// JSON-RPC method names of both protocol versions.
var (
	sendMethods   = []string{"SendMessage", "message/send"}
	cancelMethods = []string{"CancelTask", "tasks/cancel"}
	getMethods    = []string{"GetTask", "tasks/get"}
	listMethods   = []string{"ListTasks", "tasks/list"}
)

// jsAgent is the js-echo agent (examples/agents/js-echo) running as a node
// process behind a recording proxy. The agent writes the proxy's URL into
// its card, so every call the operator makes passes the proxy.
type jsAgent struct {
	mode    string // the agent's --protocol: 1.0, 0.3, both or rest
	process *cluster.Process
	proxy   *httptest.Server
	target  atomic.Pointer[url.URL]

	mu      sync.Mutex
	calls   []agentCall
	dropped map[string]bool // message ids whose first answer was lost
}

// agentCall is one JSON-RPC request the agent received.
type agentCall struct {
	Method    string
	TaskID    string // params.id, or the message's taskId
	MessageID string
	ContextID string // params.contextId, or the message's
	Text      string
	// Extensions is the extensions header as "Name: value" ("" when absent).
	Extensions string
}

// startJSAgent starts the agent with node and waits until it listens.
func startJSAgent(ctx context.Context, node, dir, logDir, mode string) (*jsAgent, error) {
	a := &jsAgent{mode: mode, dropped: map[string]bool{}}
	a.proxy = httptest.NewServer(a)
	p, err := cluster.StartProcess(cluster.ProcessOptions{
		Name:    "js-echo (" + mode + ")",
		Path:    node,
		Args:    []string{filepath.Join(dir, "agent.js"), "--protocol=" + mode, "--public-url=" + a.proxy.URL},
		LogPath: filepath.Join(logDir, "js-echo-"+strings.ReplaceAll(mode, ".", "")+".log"),
	})
	if err != nil {
		a.proxy.Close()
		return nil, err
	}
	a.process = p
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := p.WaitFor(ctx, regexp.MustCompile(`listening on (\S+)`))
	if err != nil {
		a.Close()
		return nil, err
	}
	u, err := url.Parse(m[1])
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s printed a bad address: %w", p.Name(), err)
	}
	a.target.Store(u)
	return a, nil
}

// URL is the agent's base URL as the operator sees it (the proxy).
func (a *jsAgent) URL() string { return a.proxy.URL }

// Close stops the agent before its proxy: the operator may still hold a
// stream (SubscribeToTask) open through the proxy, and httptest's Close
// waits for every active request.
func (a *jsAgent) Close() {
	if a.process != nil {
		_ = a.process.Stop(5 * time.Second)
	}
	a.proxy.CloseClientConnections()
	a.proxy.Close()
}

// Log is what the agent printed so far.
func (a *jsAgent) Log() string { return a.process.Log() }

// Logged reports whether the agent printed a line containing s.
func (a *jsAgent) Logged(s string) bool { return strings.Contains(a.Log(), s) }

func (a *jsAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := a.target.Load()
	if target == nil {
		http.Error(w, "agent not started", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	c, ok := parseCall(body)
	if !ok {
		c, ok = parseRESTCall(r, body)
	}
	if ok {
		if v := r.Header.Get("A2A-Extensions"); v != "" {
			c.Extensions = "A2A-Extensions: " + v
		} else if v := r.Header.Get("X-A2A-Extensions"); v != "" {
			c.Extensions = "X-A2A-Extensions: " + v
		}
		a.mu.Lock()
		a.calls = append(a.calls, c)
		drop := slices.Contains(sendMethods, c.Method) && strings.Contains(c.Text, dropMarker) && !a.dropped[c.MessageID]
		if drop {
			a.dropped[c.MessageID] = true
		}
		a.mu.Unlock()
		if drop {
			proxyTo(target).ServeHTTP(httptest.NewRecorder(), r) // the agent takes the task...
			if hj, ok := w.(http.Hijacker); ok {                 // ...and its answer is lost
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		}
	}
	proxyTo(target).ServeHTTP(w, r)
}

func proxyTo(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
}

// parseCall reads a JSON-RPC request of either protocol version.
func parseCall(body []byte) (agentCall, bool) {
	var req struct {
		Method string `json:"method"`
		Params struct {
			ID        string `json:"id"`
			ContextID string `json:"contextId"`
			Message   *struct {
				MessageID string `json:"messageId"`
				TaskID    string `json:"taskId"`
				ContextID string `json:"contextId"`
				Parts     []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.Method == "" {
		return agentCall{}, false
	}
	c := agentCall{Method: req.Method, TaskID: req.Params.ID, ContextID: req.Params.ContextID}
	if m := req.Params.Message; m != nil {
		c.TaskID, c.MessageID, c.ContextID = m.TaskID, m.MessageID, m.ContextID
		for _, p := range m.Parts {
			c.Text += p.Text
		}
	}
	return c, true
}

// restRoute is an HTTP+JSON path of the 1.0 binding: the operation it
// names, the task id in it.
var restRoute = regexp.MustCompile(`/(message:send|message:stream|tasks(?:/([^/:?]+))?(:cancel|:subscribe)?)$`)

// parseRESTCall reads an HTTP+JSON request as the JSON-RPC call of the
// same operation, so the tests read the calls of both bindings alike.
func parseRESTCall(r *http.Request, body []byte) (agentCall, bool) {
	m := restRoute.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return agentCall{}, false
	}
	c := agentCall{TaskID: m[2], ContextID: r.URL.Query().Get("contextId")}
	switch {
	case m[1] == "message:send", m[1] == "message:stream":
		c.Method = "SendMessage"
		if m[1] == "message:stream" {
			c.Method = "SendStreamingMessage"
		}
		var req struct {
			Message struct {
				MessageID string `json:"messageId"`
				TaskID    string `json:"taskId"`
				ContextID string `json:"contextId"`
				Parts     []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		}
		if json.Unmarshal(body, &req) != nil {
			return agentCall{}, false
		}
		c.TaskID, c.MessageID, c.ContextID = req.Message.TaskID, req.Message.MessageID, req.Message.ContextID
		for _, p := range req.Message.Parts {
			c.Text += p.Text
		}
	case m[3] == ":cancel":
		c.Method = "CancelTask"
	case m[3] == ":subscribe":
		c.Method = "SubscribeToTask"
	case m[2] != "":
		c.Method = "GetTask"
	default:
		c.Method = "ListTasks"
	}
	return c, true
}

// Calls returns the recorded calls whose method is one of methods.
func (a *jsAgent) Calls(methods []string) []agentCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []agentCall
	for _, c := range a.calls {
		if slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Sends returns the sends whose message is in the given context.
func (a *jsAgent) Sends(contextID string) []agentCall {
	return slices.DeleteFunc(a.Calls(sendMethods), func(c agentCall) bool { return c.ContextID != contextID })
}

// Cancelled reports whether a cancel of the task reached the agent.
func (a *jsAgent) Cancelled(taskID string) bool {
	return slices.ContainsFunc(a.Calls(cancelMethods), func(c agentCall) bool { return c.TaskID == taskID })
}
