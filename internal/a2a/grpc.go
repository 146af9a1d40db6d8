/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The gRPC binding (A2A 1.0) keeps the guarantees of the HTTP bindings:
//
//   - TLS, the egress policy and the timeout come from Endpoint.HTTPClient,
//     which must be built by NewHTTPClient (or be nil for the defaults): the
//     same TLS configuration, the same dial-time deny check (egressDialer) and
//     a deadline of HTTPClient.Timeout on every call. No proxy is used.
//   - Endpoint.Headers go on every call as gRPC metadata (lower-case keys).
//   - Every response message is bounded by Endpoint.MaxResponseBytes.
//   - The tenant travels in every request message, as with the other bindings.
//
// TLS is chosen from the interface URL (gRPC URLs are often a bare host:port):
//
//	https://host[:port], grpcs://host[:port]  TLS; port 443 when absent
//	host[:port]                               TLS; port 443 when absent
//	http://host[:port], grpc://host[:port]    plain text unless a CA bundle is
//	                                          configured (then TLS); port 80 when absent
//
// So plain text is only used when the URL's scheme asks for it. TLS verifies
// against the system roots plus the CA bundle, unless InsecureSkipVerify opted
// out. A URL with a path, query or user info is refused: gRPC cannot route on
// them.

// grpcTarget maps an interface URL to a dial target and whether to use TLS.
func grpcTarget(raw string, hasCA bool) (target string, useTLS bool, err error) {
	scheme, _, found := strings.Cut(raw, "://")
	if !found {
		scheme, raw = "", "//"+raw
	}
	var port string
	switch strings.ToLower(scheme) {
	case "", schemeHTTPS, "grpcs":
		useTLS, port = true, "443"
	case schemeHTTP, "grpc":
		useTLS, port = hasCA, "80"
	default:
		return "", false, fmt.Errorf("unsupported scheme %q in the gRPC interface URL", scheme)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, fmt.Errorf("invalid gRPC interface URL: %w", err)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false, errors.New("a gRPC interface URL cannot have a path, query or user info")
	}
	if u.Hostname() == "" {
		return "", false, errors.New("the gRPC interface URL has no host")
	}
	if p := u.Port(); p != "" {
		port = p
	}
	return "dns:///" + net.JoinHostPort(u.Hostname(), port), useTLS, nil
}

// grpcDialOptions returns the dial target and options for a gRPC interface.
func grpcDialOptions(ep Endpoint, rawURL string) (string, []grpc.DialOption, error) {
	hc := ep.HTTPClient
	if hc == nil {
		var err error
		if hc, err = defaultHTTPClient(); err != nil {
			return "", nil, err
		}
	}
	at, ok := hc.Transport.(*agentTransport)
	if !ok {
		return "", nil, errors.New("the gRPC binding needs an HTTP client built by NewHTTPClient: " +
			"the TLS settings and egress policy of another client cannot be applied")
	}
	target, useTLS, err := grpcTarget(rawURL, at.settings.hasCA)
	if err != nil {
		return "", nil, err
	}
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(at.settings.tls.Clone())
	}
	limit := min(maxResponseBytes(ep), math.MaxInt32)
	calls := &grpcCalls{headers: headerMetadata(ep), bearer: ep.BearerToken, timeout: hc.Timeout, limit: limit}
	dialer := egressDialer(at.settings.egress)
	return target, []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithNoProxy(),
		// A service config comes from DNS (a TXT record the agent's owner
		// writes): it could add a retry policy that sends SendMessage again
		// on its own, behind the classification that decides whether a send
		// may be repeated. Neither is taken: one call is one attempt.
		grpc.WithDisableServiceConfig(),
		grpc.WithDisableRetry(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, "tcp", addr)
			calls.dialed(err)
			return conn, err
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(limit))),
		grpc.WithMaxHeaderListSize(MaxResponseHeaderBytes),
		grpc.WithChainUnaryInterceptor(calls.unary),
		grpc.WithChainStreamInterceptor(calls.stream),
	}, nil
}

func headerMetadata(ep Endpoint) metadata.MD {
	if len(ep.Headers) == 0 {
		return nil
	}
	md := metadata.MD{}
	for k, vs := range ep.Headers {
		md[strings.ToLower(k)] = append([]string(nil), vs...)
	}
	return md
}

// grpcCalls adds the endpoint's headers and deadline to every call and
// records the outcome for classification.
type grpcCalls struct {
	headers     metadata.MD // secret values: never logged, never in errors
	bearer      func(context.Context) (string, error)
	timeout     time.Duration
	limit       int64
	lastDialErr atomic.Pointer[error]
}

// dialed records the outcome of a dial. A denial is kept over later
// failures of the same round (a name may resolve to a denied and an
// unreachable address); a successful dial clears it.
func (g *grpcCalls) dialed(err error) {
	switch {
	case err == nil:
		g.lastDialErr.Store(nil)
	case errors.Is(err, ErrEgressDenied):
		g.lastDialErr.Store(&err)
	default:
		if p := g.lastDialErr.Load(); p == nil || !errors.Is(*p, ErrEgressDenied) {
			g.lastDialErr.Store(&err)
		}
	}
}

// withHeaders sets the endpoint's headers over whatever metadata a2a-go set
// (the HTTP bindings replace same-named headers the same way).
func (g *grpcCalls) withHeaders(ctx context.Context) (context.Context, error) {
	traced := trace.SpanContextFromContext(ctx).IsValid()
	if len(g.headers) == 0 && !traced && g.bearer == nil {
		return ctx, nil
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	for k, vs := range g.headers {
		md[k] = append([]string(nil), vs...)
	}
	if g.bearer != nil {
		token, err := g.bearer(ctx)
		if err != nil {
			return ctx, fmt.Errorf("%w: %w", ErrNoCredential, err)
		}
		md.Set("authorization", "Bearer "+token)
	}
	// The call's trace context travels as gRPC metadata (traceparent).
	otel.GetTextMapPropagator().Inject(ctx, metadataCarrier(md))
	return metadata.NewOutgoingContext(ctx, md), nil
}

// metadataCarrier lets a propagator write gRPC metadata.
type metadataCarrier metadata.MD

func (m metadataCarrier) Get(key string) string {
	if vs := metadata.MD(m).Get(key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}
func (m metadataCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }
func (m metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func (g *grpcCalls) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, err := g.withHeaders(ctx)
	if err != nil {
		return err
	}
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	if o := idsOnlyCallOption(ctx, reply); o != nil {
		opts = append(opts, o)
	}
	err = invoker(ctx, method, req, reply, cc, opts...)
	callInfoFrom(ctx).setGRPC(g.outcome(err))
	return err
}

// stream only adds the headers: the operator does not stream, and a deadline
// would cut a long subscription.
func (g *grpcCalls) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, err := g.withHeaders(ctx)
	if err != nil {
		return nil, err
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// grpcOutcome is what one gRPC call ended with.
type grpcOutcome struct {
	status *status.Status
	// a2aReason: the status carries an A2A ErrorInfo, so a2a-go's error
	// holds the precise A2A error.
	a2aReason bool
	// tooLarge: the response exceeded the size bound (a local status).
	tooLarge bool
	// dialErr is the last dial error of the connection, for Unavailable.
	dialErr error
}

func (g *grpcCalls) outcome(err error) *grpcOutcome {
	st := status.Convert(err)
	out := &grpcOutcome{status: st}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == a2a.ProtocolDomain && info.GetReason() != "" {
			out.a2aReason = true
		}
	}
	switch st.Code() {
	case codes.ResourceExhausted:
		// grpc-go's own receive-size statuses end with our limit.
		msg := st.Message()
		out.tooLarge = strings.Contains(msg, "larger than max") &&
			(strings.HasSuffix(msg, fmt.Sprintf("vs. %d)", g.limit)) || strings.HasSuffix(msg, fmt.Sprintf("max %d", g.limit)))
	case codes.Unavailable:
		if p := g.lastDialErr.Load(); p != nil {
			out.dialErr = *p
		}
	}
	return out
}

// grpcCodeErrors maps status codes without an A2A ErrorInfo to the A2A error
// a2a-go uses for them (FailedPrecondition only means TaskNotCancelable
// for CancelTask).
var grpcCodeErrors = map[codes.Code]error{
	codes.NotFound:         a2a.ErrTaskNotFound,
	codes.InvalidArgument:  a2a.ErrInvalidParams,
	codes.Unauthenticated:  a2a.ErrUnauthenticated,
	codes.PermissionDenied: a2a.ErrUnauthorized,
	codes.Unimplemented:    a2a.ErrMethodNotFound,
	codes.Internal:         a2a.ErrInternalError,
}

// classifyGRPC turns the error of a gRPC call into an *Error. Unavailable,
// DeadlineExceeded, Canceled and the size bound are transport errors; every
// other status is an answer: a refusal, mapped through the A2A ErrorInfo when
// the agent sent one, else through the status code; codes without an A2A
// meaning keep their name as the reason.
func classifyGRPC(op string, err error, o *grpcOutcome) error {
	if done, ok := errors.AsType[*Error](err); ok {
		return done
	}
	code := o.status.Code()
	e := &Error{Kind: KindTransport, Op: op, Err: fmt.Errorf("grpc %s: %w", code, err)}
	switch {
	case code == codes.OK:
		// The agent answered, but the answer could not be read.
		e.Reason, e.Err = ReasonInvalidResponse, err
		return e
	case o.tooLarge:
		// The agent sent a response message: it answered.
		e.Reason, e.Err = ReasonResponseTooLarge, fmt.Errorf("%w: %s", ErrAnswerTooLarge, o.status.Message())
		return e
	case code == codes.Canceled:
		e.Reason = ReasonCanceled
		return e
	case code == codes.DeadlineExceeded:
		e.Reason = ReasonTimeout
		return e
	case code == codes.Unavailable:
		e.Reason = ReasonUnreachable
		switch {
		case errors.Is(o.dialErr, ErrEgressDenied):
			e.Reason, e.Err = ReasonEgressDenied, fmt.Errorf("grpc %s: %w", code, o.dialErr)
		case o.dialErr != nil && strings.Contains(o.status.Message(), "while dialing"):
			// The call failed to connect, so nothing was sent (NeverSent);
			// an Unavailable after a broken stream stays a plain one.
			e.Err = fmt.Errorf("grpc %s: %w", code, o.dialErr)
		}
		return e
	}

	e.Kind = KindRefused
	sentinel := grpcCodeErrors[code]
	if code == codes.FailedPrecondition && op == opCancel {
		sentinel = a2a.ErrTaskNotCancelable
	}
	for _, m := range a2aErrors {
		if (o.a2aReason && errors.Is(err, m.err)) || (!o.a2aReason && m.err == sentinel) {
			e.Code, e.Reason = m.code, m.reason
			return e
		}
	}
	e.Reason = code.String()
	return e
}
