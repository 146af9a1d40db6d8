/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package faults runs Delegations through a proxy that fails a share of the
// calls to an agent, the way networks and load balancers do, and tallies
// what such a run left behind at the agent and in the API server: tasks run
// twice, tasks whose outcome no Delegation recorded, Delegations given up
// although the agent never saw their send, and Delegations that settled
// past their deadline. The end-to-end tests run a short version and the
// benchmark the full one.
package faults

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Fault is what the proxy does to one call instead of passing it on.
type Fault int

const (
	// Refuse resets the connection before the call reaches the agent.
	Refuse Fault = iota
	// Unavailable answers 503 without passing the call on.
	Unavailable
	// Lose passes the call on, lets the agent act on it, and resets the
	// connection instead of returning the answer: the caller cannot tell
	// whether the call took effect.
	Lose
	// Delay holds the call for up to Options.MaxDelay before passing it on, and
	// passes it on even when the caller gave up meanwhile.
	Delay
	faultKinds
)

func (f Fault) String() string {
	return [...]string{"refuse", "unavailable", "lose", "delay"}[f]
}

// Options say how often the proxy fails a call and how.
type Options struct {
	// Rate is the share of calls failed, each fault kind equally likely.
	Rate float64
	// Seed starts the source the faults are drawn from, so runs with
	// different seeds see different patterns.
	Seed uint64
	// MaxDelay is the longest a delayed call is held (DefaultMaxDelay if
	// zero).
	MaxDelay time.Duration
}

// DefaultMaxDelay is the longest a delayed call is held unless the
// Options say otherwise.
const DefaultMaxDelay = 3 * time.Second

// Proxy forwards HTTP calls to an agent and fails a share of them.
type Proxy struct {
	target string
	opts   Options
	hs     *httptest.Server
	out    *http.Client

	mu     sync.Mutex
	rng    *rand.Rand
	armed  bool
	calls  int
	counts [faultKinds]int
	// partitionUntil: every call until then gets partitionFault.
	partitionUntil time.Time
	partitionFault Fault
}

// NewProxy listens on loopback and forwards to target (scheme and host).
// It passes every call on until Arm.
func NewProxy(target string, opts Options) *Proxy {
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	p := &Proxy{target: target, opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		out: &http.Client{Timeout: time.Minute}}
	p.hs = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// URL is where callers reach the agent through the proxy.
func (p *Proxy) URL() string { return p.hs.URL }

// Arm starts failing calls.
func (p *Proxy) Arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = true
}

// Partition fails every call with f for the next d, armed or not, at any
// rate: a network partition. Refuse lets nothing through; Lose lets the
// calls reach the agent and drops every answer (the agent renews leases
// and takes cancels, the caller hears nothing). A d of 0 ends a partition.
func (p *Proxy) Partition(f Fault, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partitionUntil, p.partitionFault = time.Now().Add(d), f
}

// Counts is how many calls the proxy saw while armed and how many of them
// it failed, by fault.
func (p *Proxy) Counts() (calls int, faults map[Fault]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	faults = map[Fault]int{}
	for f, n := range p.counts {
		faults[Fault(f)] = n
	}
	return p.calls, faults
}

// Close stops the proxy.
func (p *Proxy) Close() {
	p.hs.CloseClientConnections()
	p.hs.Close()
}

// draw decides the fate of one call: a fault, or ok.
func (p *Proxy) draw() (f Fault, delay time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Now().Before(p.partitionUntil) {
		p.counts[p.partitionFault]++
		return p.partitionFault, time.Duration(p.rng.Int64N(int64(p.opts.MaxDelay))), false
	}
	if !p.armed {
		return 0, 0, true
	}
	p.calls++
	if p.rng.Float64() >= p.opts.Rate {
		return 0, 0, true
	}
	f = Fault(p.rng.IntN(int(faultKinds)))
	p.counts[f]++
	return f, time.Duration(p.rng.Int64N(int64(p.opts.MaxDelay))), false
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f, delay, ok := p.draw()
	switch {
	case ok:
		p.forward(w, r.WithContext(context.WithoutCancel(r.Context())), body)
	case f == Refuse:
		reset(w)
	case f == Unavailable:
		http.Error(w, "injected fault", http.StatusServiceUnavailable)
	case f == Lose:
		p.forward(discard{}, r.WithContext(context.WithoutCancel(r.Context())), body)
		reset(w)
	case f == Delay:
		time.Sleep(delay)
		p.forward(w, r.WithContext(context.WithoutCancel(r.Context())), body)
	}
}

// forward passes the call on and copies the answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	// As a load balancer in front of an agent does: the agent sees the
	// address its callers used (an agent that names its own address in its
	// card names the proxy's).
	out.Host = r.Host
	resp, err := p.out.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// reset closes the caller's connection with a TCP reset, no answer sent.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// discard is a ResponseWriter that keeps nothing: the answer a Lose fault
// drops.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
