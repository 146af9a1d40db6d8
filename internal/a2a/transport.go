/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxResponseBytes bounds a response body when Endpoint.MaxResponseBytes is 0.
const DefaultMaxResponseBytes int64 = 1 << 20

// DefaultMaxStreamBytes bounds each event of a stream when
// Endpoint.MaxStreamBytes is 0: a status event, or an ended task with
// artifacts up to what status keeps of them.
const DefaultMaxStreamBytes int64 = 64 << 10

// maxStreamBytes is the endpoint's bound on one event of a stream.
func maxStreamBytes(ep Endpoint) int64 {
	limit := ep.MaxStreamBytes
	if limit <= 0 {
		limit = DefaultMaxStreamBytes
	}
	return min(limit, maxResponseBytes(ep))
}

// maxResponseBytes is the endpoint's bound on one response body.
func maxResponseBytes(ep Endpoint) int64 {
	if ep.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return ep.MaxResponseBytes
}

// ErrResponseTooLarge matches (errors.Is) a response over the size bound.
var ErrResponseTooLarge = errors.New("response exceeds the size limit")

// ErrNoCredential matches (errors.Is) a request that was not sent because
// its bearer token could not be had (Endpoint.BearerToken failed).
var ErrNoCredential = errors.New("no credential for the agent")

// ErrAnswerTooLarge matches (errors.Is) a successful answer (HTTP 2xx, or a
// gRPC response message) over the size bound: the agent did answer, only the
// answer could not be read. It also matches ErrResponseTooLarge.
var ErrAnswerTooLarge = fmt.Errorf("the agent answered, but %w", ErrResponseTooLarge)

// callInfo collects what the HTTP or gRPC layer saw during one operation.
// a2a-go's transports do not surface HTTP statuses or gRPC status codes in a
// typed way, so the round tripper (or the gRPC interceptor) records them here
// and classify reads them.
type callInfo struct {
	mu       sync.Mutex
	status   int
	tooLarge bool
	grpc     *grpcOutcome
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context) (context.Context, *callInfo) {
	ci := &callInfo{}
	return context.WithValue(ctx, callInfoKey{}, ci), ci
}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

func (ci *callInfo) setStatus(status int) {
	if ci == nil {
		return
	}
	ci.mu.Lock()
	ci.status = status
	ci.mu.Unlock()
}

func (ci *callInfo) setTooLarge() {
	if ci == nil {
		return
	}
	ci.mu.Lock()
	ci.tooLarge = true
	ci.mu.Unlock()
}

func (ci *callInfo) setGRPC(o *grpcOutcome) {
	if ci == nil {
		return
	}
	ci.mu.Lock()
	ci.grpc = o
	ci.mu.Unlock()
}

// wrap turns err into an *Error using what was seen on the wire.
func (ci *callInfo) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	ci.mu.Lock()
	status, tooLarge, grpcOutcome := ci.status, ci.tooLarge, ci.grpc
	ci.mu.Unlock()
	if grpcOutcome != nil {
		return classifyGRPC(op, err, grpcOutcome)
	}
	return classify(op, err, status, tooLarge)
}

// boundedTransport adds the endpoint's headers to every request, refuses
// requests outside the endpoint's origins and bounds every response body.
type boundedTransport struct {
	base    http.RoundTripper
	headers http.Header // secret values: never logged, never in errors
	bearer  func(context.Context) (string, error)
	origins *originPolicy
	max     int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// Checked before anything is sent: not only the headers but the request
	// body (a push token, the task's text) belongs to the pinned origins.
	if err := t.origins.checkURL(req.URL); err != nil {
		return nil, err
	}
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(t.headers) > 0 || traced || t.bearer != nil {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header.Del(k)
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		if t.bearer != nil {
			token, err := t.bearer(req.Context())
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrNoCredential, err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// W3C traceparent (and tracestate) of the call's span, so the
		// agent's spans join the tree's trace.
		otel.GetTextMapPropagator().Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ci := callInfoFrom(req.Context())
	ci.setStatus(resp.StatusCode)
	if resp.ContentLength > t.max {
		_ = resp.Body.Close()
		ci.setTooLarge()
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrResponseTooLarge, resp.ContentLength, t.max)
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = &boundedEvents{rc: resp.Body, limit: t.max, ci: ci}
	} else {
		resp.Body = &boundedBody{rc: resp.Body, left: t.max, limit: t.max, ci: ci}
	}
	if isIDsOnly(req.Context()) && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		resp.Body, resp.ContentLength = &idsOnlyBody{src: resp.Body}, -1
		resp.Header = resp.Header.Clone()
		resp.Header.Del("Content-Length")
	}
	if isUnstreamedError(req, resp) {
		resp.Body = sseOfJSON(resp.Body)
	}
	// Error bodies in a structured JSON media type (the JS SDK's
	// application/a2a+json google.rpc.Status, RFC 9457's
	// application/problem+json of a2a-go's 0.3 REST server) are JSON, but
	// a2a-go's REST client decodes only application/json and would turn a
	// precise A2A error into a bare server error, on every call kind.
	if resp.StatusCode != http.StatusOK && isJSONSuffixed(resp.Header.Get("Content-Type")) {
		resp.Header = resp.Header.Clone()
		resp.Header.Set("Content-Type", "application/json")
	}
	return resp, nil
}

// isJSONSuffixed reports a media type of the "+json" structured syntax
// (RFC 6839), such as application/a2a+json.
func isJSONSuffixed(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.HasSuffix(strings.ToLower(strings.TrimSpace(mediaType)), "+json")
}

// isJSON reports application/json or a "+json" media type.
func isJSON(contentType string) bool {
	return strings.HasPrefix(contentType, "application/json") || isJSONSuffixed(contentType)
}

// boundedBody fails instead of truncating: a cut JSON document must not be
// mistaken for a complete answer.
type boundedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
	ci    *callInfo
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.ci.setTooLarge()
			return 0, fmt.Errorf("%w: limit %d bytes", ErrResponseTooLarge, b.limit)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// isEventStream reports a text/event-stream body (a stream's events).
func isEventStream(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream")
}

// boundedEvents bounds each event of a server-sent event stream (the bytes
// up to the empty line that ends it), not the stream: a stream may live as
// long as its task, but what its reader holds at once is one event.
type boundedEvents struct {
	rc      io.ReadCloser
	limit   int64
	event   int64 // bytes of the event being read
	lineLen int64 // bytes of the line being read, without CR
	ci      *callInfo
}

func (b *boundedEvents) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	for i, c := range p[:n] {
		b.event++
		switch c {
		case '\n':
			if b.lineLen == 0 { // an empty line ends the event
				b.event = 0
			}
			b.lineLen = 0
		case '\r':
		default:
			b.lineLen++
		}
		if b.event > b.limit {
			b.ci.setTooLarge()
			return i, fmt.Errorf("%w: an event over %d bytes", ErrResponseTooLarge, b.limit)
		}
	}
	return n, err
}

func (b *boundedEvents) Close() error { return b.rc.Close() }

var defaultHTTPClient = sync.OnceValues(func() (*http.Client, error) {
	return NewHTTPClient(HTTPOptions{})
})

// endpointHTTPClient wraps the endpoint's client (or the default one) with
// the endpoint's headers and size bound.
func endpointHTTPClient(ep Endpoint) (*http.Client, error) {
	return boundedHTTPClient(ep, maxResponseBytes(ep))
}

// streamHTTPClient is endpointHTTPClient for streams: no overall timeout
// (the caller bounds a stream's life and its idle time) and the bound on
// each of its events.
func streamHTTPClient(ep Endpoint) (*http.Client, error) {
	hc, err := boundedHTTPClient(ep, maxStreamBytes(ep))
	if err != nil {
		return nil, err
	}
	hc.Timeout = 0
	return hc, nil
}

func boundedHTTPClient(ep Endpoint, limit int64) (*http.Client, error) {
	base := ep.HTTPClient
	if base == nil {
		var err error
		if base, err = defaultHTTPClient(); err != nil {
			return nil, err
		}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	origins, err := newOriginPolicy(ep)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport:     &boundedTransport{base: rt, headers: ep.Headers.Clone(), bearer: ep.BearerToken, origins: origins, max: limit},
		Timeout:       base.Timeout,
		Jar:           base.Jar,
		CheckRedirect: origins.checkRedirect,
	}, nil
}

// checkRedirect follows a redirect only within the endpoint's origins, so
// neither the secret headers nor the request reach another origin that way:
// the redirect response itself is returned (and reads as refused).
func (p *originPolicy) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	if !p.allows(req.URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// isUnstreamedError reports a stream request answered with one JSON
// document instead of an event stream: the JS SDK refuses a subscription
// (a task that already ended: UnsupportedOperation) that way. a2a-go reads
// only "data:" lines, so it would see an empty stream, not the refusal.
func isUnstreamedError(req *http.Request, resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && strings.Contains(req.Header.Get("Accept"), "text/event-stream") &&
		isJSON(resp.Header.Get("Content-Type"))
}

// sseOfJSON turns a JSON document into a stream of one event carrying it,
// so a2a-go decodes the JSON-RPC error it holds. What is not JSON is passed
// on as it was (and reads as an empty stream, as before).
func sseOfJSON(body io.ReadCloser) io.ReadCloser {
	data, err := io.ReadAll(body) // bounded: body is a boundedBody
	_ = body.Close()
	if err != nil { // past the size bound: the stream fails with that
		return io.NopCloser(io.MultiReader(bytes.NewReader(data), failingReader{err}))
	}
	var compact bytes.Buffer
	if json.Compact(&compact, data) != nil {
		return io.NopCloser(bytes.NewReader(data))
	}
	return io.NopCloser(io.MultiReader(strings.NewReader("data: "), &compact, strings.NewReader("\n\n")))
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
