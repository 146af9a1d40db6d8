/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"io"
	"net/http"

	"github.com/tether-dev/tether/internal/a2a"
)

// How the checker reaches the agent: an HTTP client of its own per
// endpoint, counting the bytes each answer takes.

// withHTTPClient gives the endpoint the operator's default HTTP client when
// it has none, so every binding (gRPC included) dials with its settings.
func withHTTPClient(ep a2a.Endpoint) (a2a.Endpoint, error) {
	if ep.HTTPClient == nil {
		hc, err := a2a.NewHTTPClient(a2a.HTTPOptions{})
		if err != nil {
			return ep, err
		}
		ep.HTTPClient = hc
	}
	return ep, nil
}

// httpCounting wraps the endpoint's client for the HTTP bindings; gRPC needs
// the client as NewHTTPClient built it.
func (r *runner) httpCounting(ep a2a.Endpoint) a2a.Endpoint {
	base := ep.HTTPClient
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	ep.HTTPClient = &http.Client{Transport: &countingTransport{base: rt, r: r}, Timeout: base.Timeout, Jar: base.Jar}
	return ep
}

type countingTransport struct {
	base http.RoundTripper
	r    *runner
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{rc: resp.Body, r: t.r}
	return resp, nil
}

type countingBody struct {
	rc io.ReadCloser
	n  int64
	r  *runner
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n += int64(n)
	b.r.mu.Lock()
	b.r.largestBody = max(b.r.largestBody, b.n)
	b.r.mu.Unlock()
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

// prober returns a client for one interface of the card.
func (r *runner) prober(ctx context.Context, card *a2a.Card) (a2a.Prober, error) {
	ep := r.opts.Endpoint
	if card.Binding != a2a.BindingGRPC {
		ep = r.httpCounting(ep)
	}
	p, err := a2a.NewProber(ctx, ep, card)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.probers = append(r.probers, p)
	r.mu.Unlock()
	return p, nil
}
