/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	. "github.com/onsi/gomega"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestGRPCTarget(t *testing.T) {
	for _, tc := range []struct {
		url, target string
		hasCA, tls  bool
		bad         bool
	}{
		{url: "agent.example:50051", target: "dns:///agent.example:50051", tls: true},
		{url: "agent.example", target: "dns:///agent.example:443", tls: true},
		{url: "https://agent.example", target: "dns:///agent.example:443", tls: true},
		{url: "https://agent.example:8443/", target: "dns:///agent.example:8443", tls: true},
		{url: "grpcs://agent.example:1", target: "dns:///agent.example:1", tls: true},
		{url: "http://10.0.0.1:50051", target: "dns:///10.0.0.1:50051", tls: false},
		{url: "http://10.0.0.1", target: "dns:///10.0.0.1:80", tls: false},
		{url: "grpc://[::1]:50051", target: "dns:///[::1]:50051", tls: false},
		{url: "[::1]:50051", target: "dns:///[::1]:50051", tls: true},
		{url: "http://agent.example:50051", hasCA: true, target: "dns:///agent.example:50051", tls: true},
		{url: "https://agent.example/a2a", bad: true},
		{url: "https://user:pw@agent.example", bad: true},
		{url: "http://agent.example:1?x=y", bad: true},
		{url: "unix:///run/agent.sock", bad: true},
		{url: "http://", bad: true},
		{url: "", bad: true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			g := NewWithT(t)
			target, useTLS, err := grpcTarget(tc.url, tc.hasCA)
			if tc.bad {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(target).To(Equal(tc.target))
			g.Expect(useTLS).To(Equal(tc.tls))
		})
	}
}

// fakeGRPCAgent answers every A2A gRPC method with answer(method): a proto
// message or a status error. It records the metadata of each call.
type fakeGRPCAgent struct {
	addr string
	mu   sync.Mutex
	md   []metadata.MD
}

func newFakeGRPCAgent(t *testing.T, answer func(ctx context.Context, method string) (proto.Message, error), opts ...grpc.ServerOption) *fakeGRPCAgent {
	t.Helper()
	f := &fakeGRPCAgent{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		md, _ := metadata.FromIncomingContext(stream.Context())
		f.mu.Lock()
		f.md = append(f.md, md)
		f.mu.Unlock()
		if err := stream.RecvMsg(&emptypb.Empty{}); err != nil {
			return err
		}
		msg, err := answer(stream.Context(), method[strings.LastIndex(method, "/")+1:])
		if err != nil {
			return err
		}
		return stream.SendMsg(msg)
	}))
	s := grpc.NewServer(opts...)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	f.addr = lis.Addr().String()
	return f
}

func (f *fakeGRPCAgent) metadata() []metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metadata.MD(nil), f.md...)
}

// grpcOrigins are the origins an owner lists for a gRPC interface URL: the
// TLS one and the plain text one (an http:// URL uses TLS with a CA bundle).
func grpcOrigins(url string) []string {
	_, hostPort, found := strings.Cut(url, "://")
	if !found {
		hostPort = url
	}
	return []string{"https://" + hostPort, "http://" + hostPort}
}

func completedTask(id string) *a2apb.Task {
	return &a2apb.Task{Id: id, ContextId: "ctx", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED}}
}

func grpcClient(t *testing.T, g Gomega, ep Endpoint, url string) Client {
	t.Helper()
	ep.AllowedOrigins = append(ep.AllowedOrigins, grpcOrigins(url)...)
	c, err := NewClient(context.Background(), ep, &Card{ProtocolVersion: ProtocolV1, Binding: BindingGRPC, URL: url})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Close)
	return c
}

func a2aStatus(code codes.Code, sentinel error) error {
	st, err := status.New(code, "agent says no").WithDetails(&errdetails.ErrorInfo{Reason: a2a.ErrorReason(sentinel), Domain: a2a.ProtocolDomain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestGRPCStatusCodes(t *testing.T) {
	for name, tc := range map[string]struct {
		err         error
		kind        ErrorKind
		reason      string
		class       string
		unsupported bool
		outcome     Class
	}{
		"Unavailable":                  {err: status.Error(codes.Unavailable, "down"), kind: KindTransport, reason: ReasonUnreachable, class: FailureClassUnreachable, outcome: ClassUnknown},
		"DeadlineExceeded":             {err: status.Error(codes.DeadlineExceeded, "slow"), kind: KindTransport, reason: ReasonTimeout, class: FailureClassUnreachable, outcome: ClassUnknown},
		"ResourceExhausted (quota)":    {err: status.Error(codes.ResourceExhausted, "quota"), kind: KindRefused, reason: "ResourceExhausted", class: FailureClassUnreachable, outcome: ClassUnknown},
		"NotFound":                     {err: status.Error(codes.NotFound, "no task"), kind: KindRefused, reason: ReasonTaskNotFound, class: FailureClassRejected, outcome: ClassRefused},
		"InvalidArgument":              {err: status.Error(codes.InvalidArgument, "bad"), kind: KindRefused, reason: ReasonInvalidParams, class: FailureClassInvalidRequest, outcome: ClassRefused},
		"Unauthenticated":              {err: status.Error(codes.Unauthenticated, "who"), kind: KindRefused, reason: ReasonUnauthenticated, class: FailureClassPolicyRefusal, outcome: ClassRefused},
		"PermissionDenied":             {err: status.Error(codes.PermissionDenied, "no"), kind: KindRefused, reason: ReasonPermissionDenied, class: FailureClassPolicyRefusal, outcome: ClassRefused},
		"Unimplemented":                {err: status.Error(codes.Unimplemented, "?"), kind: KindRefused, reason: ReasonMethodNotFound, class: FailureClassRejected, unsupported: true, outcome: ClassRefused},
		"FailedPrecondition":           {err: status.Error(codes.FailedPrecondition, "state"), kind: KindRefused, reason: "FailedPrecondition", class: FailureClassRejected, outcome: ClassRefused},
		"Internal":                     {err: status.Error(codes.Internal, "oops"), kind: KindRefused, reason: ReasonInternalError, class: FailureClassUnreachable, outcome: ClassUnknown},
		"Aborted":                      {err: status.Error(codes.Aborted, "retry"), kind: KindRefused, reason: "Aborted", class: FailureClassUnreachable, outcome: ClassUnknown},
		"Unknown":                      {err: status.Error(codes.Unknown, "?"), kind: KindRefused, reason: "Unknown", class: FailureClassUnreachable, outcome: ClassUnknown},
		"A2A UnsupportedOperation":     {err: a2aStatus(codes.FailedPrecondition, a2a.ErrUnsupportedOperation), kind: KindRefused, reason: ReasonUnsupported, class: FailureClassRejected, unsupported: true, outcome: ClassRefused},
		"A2A ContentTypeNotSupported":  {err: a2aStatus(codes.InvalidArgument, a2a.ErrUnsupportedContentType), kind: KindRefused, reason: ReasonContentTypeNotSupported, class: FailureClassInvalidRequest, outcome: ClassRefused},
		"A2A ExtensionSupportRequired": {err: a2aStatus(codes.FailedPrecondition, a2a.ErrExtensionSupportRequired), kind: KindRefused, reason: ReasonExtensionSupportRequired, class: FailureClassRejected, outcome: ClassRefused},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) { return nil, tc.err })
			c := grpcClient(t, g, Endpoint{Headers: http.Header{"Authorization": {"Bearer " + secret}}}, "http://"+f.addr)
			_, err := c.Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
			g.Expect(err).To(HaveOccurred())
			var e *Error
			g.Expect(errors.As(err, &e)).To(BeTrue())
			g.Expect(e.Kind).To(Equal(tc.kind), err.Error())
			g.Expect(e.Reason).To(Equal(tc.reason), err.Error())
			g.Expect(FailureClassOf(err)).To(Equal(tc.class), err.Error())
			g.Expect(Classify(err)).To(Equal(tc.outcome), err.Error())
			g.Expect(NeverSent(err)).To(BeFalse(), "the agent got the call")
			g.Expect(errors.Is(err, ErrUnsupported)).To(Equal(tc.unsupported), err.Error())
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(f.metadata()).To(ConsistOf(HaveKeyWithValue("authorization", []string{"Bearer " + secret})))
		})
	}
}

func TestGRPCNotFoundIsTaskNotFound(t *testing.T) {
	g := NewWithT(t)
	f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) {
		return nil, status.Error(codes.NotFound, "no such task")
	})
	_, err := grpcClient(t, g, Endpoint{}, "http://"+f.addr).Get(context.Background(), "t-1", false)
	g.Expect(IsTaskNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(IsRefused(err)).To(BeTrue())
}

// An agent on another SDK answers a cancel of a finished task with a bare
// FailedPrecondition: Cancel reads the task back.
func TestGRPCCancelOfAFinishedTaskReadsItBack(t *testing.T) {
	g := NewWithT(t)
	f := newFakeGRPCAgent(t, func(_ context.Context, method string) (proto.Message, error) {
		if method == "GetTask" {
			return completedTask("t-1"), nil
		}
		return nil, status.Error(codes.FailedPrecondition, "task is terminal")
	})
	got, err := grpcClient(t, g, Endpoint{}, "http://"+f.addr).Cancel(context.Background(), "t-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal("t-1"))
	g.Expect(got.State).To(Equal(StateCompleted))
}

func TestGRPCListTasksUnimplementedIsUnsupported(t *testing.T) {
	g := NewWithT(t)
	f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) {
		return nil, status.Error(codes.Unimplemented, "method ListTasks not implemented")
	})
	_, err := grpcClient(t, g, Endpoint{}, "http://"+f.addr).ListByContext(context.Background(), "ctx")
	g.Expect(errors.Is(err, ErrUnsupported)).To(BeTrue(), "%v", err)
	g.Expect(IsRefused(err)).To(BeTrue())
}

func TestGRPCUnreachableAndTimeouts(t *testing.T) {
	g := NewWithT(t)

	_, err := grpcClient(t, g, Endpoint{}, closedURL(t)).Get(context.Background(), "t-1", false)
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonUnreachable))

	// The HTTP client's timeout is each call's deadline.
	f := newFakeGRPCAgent(t, func(ctx context.Context, _ string) (proto.Message, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	hc, err := NewHTTPClient(HTTPOptions{Timeout: 200 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	c := grpcClient(t, g, Endpoint{HTTPClient: hc}, "http://"+f.addr)
	start := time.Now()
	_, err = c.Get(context.Background(), "t-1", false)
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonTimeout))

	// So is the caller's context.
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err = c.Get(ctx, "t-1", false)
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonTimeout))
}

func TestGRPCEgressPolicy(t *testing.T) {
	g := NewWithT(t)

	// The default policy refuses the metadata address before connecting.
	start := time.Now()
	_, err := grpcClient(t, g, Endpoint{}, "http://169.254.169.254:50051").Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonEgressDenied))
	g.Expect(FailureClassOf(err)).To(Equal(FailureClassUnreachable))

	// The resolved address is checked: a name for a denied address is refused.
	f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) { return completedTask("t-1"), nil })
	_, port, _ := net.SplitHostPort(f.addr)
	_, loopback4, _ := net.ParseCIDR("127.0.0.0/8")
	_, loopback6, _ := net.ParseCIDR("::1/128")
	hc, err := NewHTTPClient(HTTPOptions{DenyCIDRs: []*net.IPNet{loopback4, loopback6}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = grpcClient(t, g, Endpoint{HTTPClient: hc}, "http://localhost:"+port).Get(context.Background(), "t-1", false)
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%v", err)
	g.Expect(f.metadata()).To(BeEmpty())

	// Allowed otherwise.
	task, err := grpcClient(t, g, Endpoint{}, "http://localhost:"+port).Get(context.Background(), "t-1", false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(task.State).To(Equal(StateCompleted))
}

func TestGRPCTLS(t *testing.T) {
	// httptest's certificate is valid for 127.0.0.1.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	cert, caPEM := tlsSrv.TLS.Certificates[0], pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	tlsSrv.Close()
	f := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) { return completedTask("t-1"), nil },
		grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))

	get := func(g Gomega, opts HTTPOptions, url string) error {
		hc, err := NewHTTPClient(opts)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = grpcClient(t, g, Endpoint{HTTPClient: hc}, url).Get(context.Background(), "t-1", false)
		return err
	}
	for name, tc := range map[string]struct {
		opts HTTPOptions
		url  string
		ok   bool
	}{
		"host:port, verified with the CA bundle": {HTTPOptions{CAPEM: caPEM}, f.addr, true},
		"https, verified with the CA bundle":     {HTTPOptions{CAPEM: caPEM}, "https://" + f.addr, true},
		"http with a CA bundle still means TLS":  {HTTPOptions{CAPEM: caPEM}, "http://" + f.addr, true},
		"host:port, unknown CA":                  {HTTPOptions{}, f.addr, false},
		"host:port, verification opted out":      {HTTPOptions{InsecureSkipVerify: true}, f.addr, true},
		"http without a CA bundle is plain text": {HTTPOptions{InsecureSkipVerify: true}, "http://" + f.addr, false},
		"https, unknown CA":                      {HTTPOptions{}, "https://" + f.addr, false},
		"grpcs, verification opted out":          {HTTPOptions{InsecureSkipVerify: true}, "grpcs://" + f.addr, true},
		"grpc without a CA bundle is plain text": {HTTPOptions{}, "grpc://" + f.addr, false},
		"https, verified, name not in the cert":  {HTTPOptions{CAPEM: caPEM}, "https://localhost:" + f.addr[strings.LastIndex(f.addr, ":")+1:], false},
		"https, opted out, name not in the cert": {HTTPOptions{InsecureSkipVerify: true}, "https://localhost:" + f.addr[strings.LastIndex(f.addr, ":")+1:], true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := get(g, tc.opts, tc.url)
			if tc.ok {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
		})
	}
}

func TestGRPCNeedsAClientFromNewHTTPClient(t *testing.T) {
	g := NewWithT(t)
	_, err := NewClient(context.Background(), Endpoint{URL: "http://127.0.0.1:1", HTTPClient: &http.Client{}}, &Card{ProtocolVersion: ProtocolV1, Binding: BindingGRPC, URL: "http://127.0.0.1:1"})
	g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Reason).To(Equal(ReasonInvalidRequest))

	_, err = NewClient(context.Background(), Endpoint{URL: "https://agent.example"}, &Card{ProtocolVersion: ProtocolV1, Binding: BindingGRPC, URL: "https://agent.example/a2a"})
	g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
}

// A service config handed over by the name resolver (DNS TXT records, in
// production) must not add retries: a retried SendMessage would start a
// second task behind the classification of the first attempt. The same
// config without the client's options shows that it would retry.
func TestGRPCIgnoresResolverServiceConfig(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	agent := newFakeGRPCAgent(t, func(context.Context, string) (proto.Message, error) {
		mu.Lock()
		attempts++
		mu.Unlock()
		return nil, status.Error(codes.Unavailable, "try again")
	})
	const retrying = `{"methodConfig":[{"name":[{"service":"a2a.v1.A2AService"}],"retryPolicy":{` +
		`"maxAttempts":4,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}}]}`
	call := func(t *testing.T, opts []grpc.DialOption) int {
		g := NewWithT(t)
		mu.Lock()
		attempts = 0
		mu.Unlock()
		r := manual.NewBuilderWithScheme("svccfg")
		conn, err := grpc.NewClient("svccfg:///agent", append(opts, grpc.WithResolvers(r))...)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close() }()
		conn.Connect()
		g.Eventually(func() bool { defer func() { _ = recover() }(); return r.CC() != nil }).Should(BeTrue())
		r.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: agent.addr}},
			ServiceConfig: r.CC().ParseServiceConfig(retrying)})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = conn.Invoke(ctx, "/a2a.v1.A2AService/SendMessage", &emptypb.Empty{}, &emptypb.Empty{})
		g.Expect(status.Code(err)).To(Equal(codes.Unavailable))
		mu.Lock()
		defer mu.Unlock()
		return attempts
	}
	ep := Endpoint{}
	_, opts, err := grpcDialOptions(ep, "http://"+agent.addr)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Run("the client's options", func(t *testing.T) {
		NewWithT(t).Expect(call(t, opts)).To(Equal(1), "one call, one attempt")
	})
	t.Run("without them the config retries", func(t *testing.T) {
		plain := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		NewWithT(t).Expect(call(t, plain)).To(Equal(4))
	})
}
