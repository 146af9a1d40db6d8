/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package faults

import (
	"bytes"
	"context"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// LeaseFault is what the API proxy does to one Lease write.
type LeaseFault int

const (
	// WriteFailed answers 500 without passing the write on.
	WriteFailed LeaseFault = iota
	// WriteTimedOut holds the write, passes it on, and answers 504 as the
	// API server does when a request outlives its timeout: the write
	// landed, the writer cannot tell.
	WriteTimedOut
	// WriteTimedOutUnapplied holds the write and answers 504 without
	// passing it on.
	WriteTimedOutUnapplied
	// GiveBackFailed answers 500 to a write that gives a Lease back (no
	// holder), without passing it on.
	GiveBackFailed
	leaseFaultKinds
)

func (f LeaseFault) String() string {
	return [...]string{"failed", "timed out (applied)", "timed out (not applied)", "give-back failed"}[f]
}

// LeaseOptions say how often the API proxy fails a Lease write.
type LeaseOptions struct {
	// Rate is the share of Lease writes failed (failed, timed out applied
	// or not, each equally likely).
	Rate float64
	// GiveBackRate is the share of give-backs (writes that leave the Lease
	// without a holder) failed.
	GiveBackRate float64
	Seed         uint64
	// Hold is how long a timed-out write is held before its 504.
	Hold time.Duration
}

// APIProxy passes every request on to an API server with that server's
// credentials, keeping the caller's impersonation headers, and fails a
// share of the writes of coordination.k8s.io Leases: what a leader sees
// when its API server is slow or unavailable.
type APIProxy struct {
	hs   *httptest.Server
	rp   *httputil.ReverseProxy
	opts LeaseOptions

	mu        sync.Mutex
	rng       *rand.Rand
	writes    int
	giveBacks int
	counts    [leaseFaultKinds]int
}

// NewAPIProxy serves on loopback (plain HTTP) in front of the API server
// of cfg.
func NewAPIProxy(cfg *rest.Config, opts LeaseOptions) (*APIProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	p := &APIProxy{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851f42d4c957f2d))}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		Transport:     rt,
		FlushInterval: -1, // watches stream
		// Callers ending watches are no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.hs = httptest.NewServer(http.HandlerFunc(p.serve))
	return p, nil
}

// WriteKubeconfig writes a kubeconfig that reaches the API server through
// the proxy (the proxy adds the credentials).
func (p *APIProxy) WriteKubeconfig(path string) error {
	const name = "through-proxy"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: p.hs.URL}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// LeaseCounts are the Lease writes an APIProxy saw.
type LeaseCounts struct {
	// Writes counts every Lease write, GiveBacks those that left the Lease
	// without a holder.
	Writes, GiveBacks int
	// Faults counts the writes failed, by fault.
	Faults map[LeaseFault]int
}

// Counts is what passed so far.
func (p *APIProxy) Counts() LeaseCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := LeaseCounts{Writes: p.writes, GiveBacks: p.giveBacks, Faults: map[LeaseFault]int{}}
	for f, n := range p.counts {
		c.Faults[LeaseFault(f)] = n
	}
	return c
}

// Close stops the proxy.
func (p *APIProxy) Close() {
	p.hs.CloseClientConnections()
	p.hs.Close()
}

func (p *APIProxy) draw(giveBack bool) (LeaseFault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	if giveBack {
		p.giveBacks++
	}
	if giveBack && p.rng.Float64() < p.opts.GiveBackRate {
		p.counts[GiveBackFailed]++
		return GiveBackFailed, true
	}
	if p.rng.Float64() >= p.opts.Rate {
		return 0, false
	}
	f := LeaseFault(p.rng.IntN(int(GiveBackFailed)))
	p.counts[f]++
	return f, true
}

func (p *APIProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || !strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/") {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f, failed := p.draw(givesBack(body))
	switch {
	case !failed:
		p.rp.ServeHTTP(w, r)
	case f == WriteFailed || f == GiveBackFailed:
		http.Error(w, "injected fault", http.StatusInternalServerError)
	case f == WriteTimedOut:
		time.Sleep(p.opts.Hold)
		p.rp.ServeHTTP(discard{}, r.WithContext(context.WithoutCancel(r.Context())))
		http.Error(w, "Timeout: request did not complete within requested timeout", http.StatusGatewayTimeout)
	case f == WriteTimedOutUnapplied:
		time.Sleep(p.opts.Hold)
		http.Error(w, "Timeout: request did not complete within requested timeout", http.StatusGatewayTimeout)
	}
}

// givesBack: a write of a whole Lease (JSON or protobuf, as client-go
// sends it) that leaves it without a holder.
func givesBack(body []byte) bool {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	lease, ok := obj.(*coordinationv1.Lease)
	if err != nil || !ok {
		return false
	}
	return lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == ""
}
