/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestEgressPolicyRefusesMetadataAndAllowsLoopback(t *testing.T) {
	g := NewWithT(t)
	hc, err := NewHTTPClient(HTTPOptions{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())

	start := time.Now()
	_, err = hc.Get("http://169.254.169.254/latest/meta-data/")
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("address 169.254.169.254 is denied by the egress policy"))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), "refused before connecting")

	_, err = hc.Get("http://[fe80::1]:80/")
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%v", err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	resp, err := hc.Get(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	// Through the A2A entry points it is a transport error that still says why.
	_, err = ResolveCard(context.Background(), Endpoint{URL: "http://169.254.169.254", HTTPClient: hc})
	g.Expect(IsTransport(err)).To(BeTrue(), "%v", err)
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue())
	g.Expect(err.(*Error).Reason).To(Equal(ReasonEgressDenied))
}

// The policy checks the dialled address, not the name: a host name resolving
// to a denied address is refused too.
func TestEgressPolicyChecksResolvedAddresses(t *testing.T) {
	g := NewWithT(t)
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	hc, err := NewHTTPClient(HTTPOptions{DenyCIDRs: []*net.IPNet{loopback}})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = hc.Get("http://localhost:" + port + "/")
	g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%v", err)
}

// Every address with its verdict under the built-in list plus a deny list
// of loopback (the chart's default), and under an allow list.
func TestEgressVerdicts(t *testing.T) {
	cidrs := func(s ...string) []*net.IPNet {
		out := make([]*net.IPNet, 0, len(s))
		for _, c := range s {
			_, n, err := net.ParseCIDR(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	builtin, err := newEgressPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	noLoopback, err := newEgressPolicy(cidrs("127.0.0.0/8", "::1/128"), nil)
	if err != nil {
		t.Fatal(err)
	}
	allowList, err := newEgressPolicy(nil, cidrs("10.0.0.0/8", "fd12::/16"))
	if err != nil {
		t.Fatal(err)
	}
	const allowed = ""
	for _, tc := range []struct {
		policy *egressPolicy
		addr   string
		want   string // "" allowed, else a piece of the reason
	}{
		// Always denied, whatever the flags.
		{builtin, "0.0.0.0", "unspecified"},
		{builtin, "0.1.2.3", "unspecified"},
		{builtin, "::", "unspecified"},
		{builtin, "169.254.169.254", "link-local"},
		{builtin, "169.254.170.2", "link-local"},
		{builtin, "169.254.1.1", "link-local"},
		{builtin, "fe80::1", "link-local"},
		{builtin, "fe80::1%eth0", "link-local"},
		{builtin, "fd00:ec2::254", "AWS metadata"},
		{builtin, "100.100.100.200", "Alibaba"},
		{builtin, "168.63.129.16", "Azure"},
		{builtin, "::ffff:127.0.0.1", "IPv4-mapped"},
		{builtin, "::ffff:169.254.169.254", "IPv4-mapped"},
		{builtin, "::ffff:0:a00:1", "IPv4-translated"},
		{builtin, "64:ff9b::7f00:1", "NAT64"},
		{builtin, "64:ff9b::a9fe:a9fe", "NAT64"},
		{builtin, "64:ff9b:1::7f00:1", "NAT64"},
		{builtin, "2002:7f00:1::1", "6to4"},
		{builtin, "2001:0:4136:e378::1", "Teredo"},
		{builtin, "169.254.170.23", "link-local"},
		{builtin, "fd00:ec2::23", "Pod Identity"},
		{builtin, "fd00:ec2::253", "AWS DNS"},
		{builtin, "fd00:ec2::123", "AWS time"},
		{builtin, "fd20:ce::254", "GCP metadata"},
		{builtin, "fd00:c1::a9fe:a9fe", "OCI metadata"},
		{builtin, "::a9fe:a9fe", "IPv4-compatible"},
		{builtin, "::7f00:1", "IPv4-compatible"},
		{builtin, "::2", "IPv4-compatible"},
		{builtin, "localhost", "not an IP address"},
		// Allowed by the built-in list alone.
		{builtin, "127.0.0.1", allowed},
		{builtin, "::1", allowed},
		{builtin, "10.0.0.1", allowed},
		{builtin, "100.100.100.201", allowed},
		{builtin, "8.8.8.8", allowed},
		{builtin, "2001:db8::1", allowed},
		{builtin, "2001:1::1", allowed}, // not Teredo (2001:0::/32)
		{builtin, "fd20:ce::253", allowed},
		{builtin, "::1:0:0:1", allowed}, // outside ::/96
		// The operator's deny list adds to the built-in one.
		{noLoopback, "127.0.0.1", "deny list"},
		{noLoopback, "127.1.2.3", "deny list"},
		{noLoopback, "::1", "deny list"},
		{noLoopback, "0.0.0.0", "unspecified"},
		{noLoopback, "169.254.169.254", "link-local"},
		{noLoopback, "10.0.0.1", allowed},
		// An allow list names everything that may be reached.
		{allowList, "10.1.2.3", allowed},
		{allowList, "fd12::1", allowed},
		{allowList, "11.0.0.1", "allow list"},
		{allowList, "127.0.0.1", "allow list"},
		{allowList, "::ffff:10.0.0.1", "IPv4-mapped"},
	} {
		err := tc.policy.check(net.JoinHostPort(tc.addr, "443"))
		switch {
		case tc.want == allowed && err != nil:
			t.Errorf("%s: denied (%v), want allowed", tc.addr, err)
		case tc.want != allowed && err == nil:
			t.Errorf("%s: allowed, want denied (%s)", tc.addr, tc.want)
		case tc.want != allowed && (!errors.Is(err, ErrEgressDenied) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a denial naming %q", tc.addr, err, tc.want)
		}
	}
}

// 0.0.0.0 and [::] reach local listeners on Linux: with loopback denied they
// must not get through.
func TestUnspecifiedAddressesDoNotReachLoopback(t *testing.T) {
	g := NewWithT(t)
	_, v4, _ := net.ParseCIDR("127.0.0.0/8")
	_, v6, _ := net.ParseCIDR("::1/128")
	hc, err := NewHTTPClient(HTTPOptions{DenyCIDRs: []*net.IPNet{v4, v6}})
	g.Expect(err).NotTo(HaveOccurred())
	reached := make(chan struct{}, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached <- struct{}{} }))
	lis, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skipf("no dual-stack listener: %v", err)
	}
	srv.Listener = lis
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	for _, host := range []string{"0.0.0.0", "[::]", "127.0.0.1", "[::1]", "[::ffff:127.0.0.1]"} {
		_, err := hc.Get("http://" + host + ":" + port + "/")
		g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%s: %v", host, err)
	}
	g.Expect(reached).To(BeEmpty())
}

func TestTLSVerification(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	get := func(opts HTTPOptions) error {
		hc, err := NewHTTPClient(opts)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := hc.Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	g.Expect(get(HTTPOptions{})).To(HaveOccurred(), "unknown CA is refused")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	g.Expect(get(HTTPOptions{CAPEM: caPEM})).To(Succeed())
	g.Expect(get(HTTPOptions{InsecureSkipVerify: true})).To(Succeed())
	_, err := NewHTTPClient(HTTPOptions{CAPEM: []byte("not a certificate")})
	g.Expect(err).To(HaveOccurred())
}

func TestRedirectToAnotherHostKeepsTheHeaders(t *testing.T) {
	g := NewWithT(t)
	leaked := make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { leaked <- r.Header.Get("Authorization") }))
	defer other.Close()
	// Same loopback IP, different port: a different host for the redirect check.
	redirecting := httptest.NewServer(http.RedirectHandler(other.URL+"/card", http.StatusFound))
	defer redirecting.Close()

	_, err := ResolveCard(context.Background(), Endpoint{URL: redirecting.URL, Headers: http.Header{"Authorization": {"Bearer " + secret}}})
	g.Expect(IsRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.(*Error).Code).To(Equal(http.StatusFound))
	g.Expect(leaked).To(BeEmpty())
}

// The operator's own pod, its node's kubelet and the API server are denied
// on their ports, whatever the allow list says; other ports of the node and
// of the API server's address stay reachable (a local API server shares
// loopback with local agents).
func TestOwnAddressesAreDenied(t *testing.T) {
	g := NewWithT(t)
	lookup := func(_ context.Context, host string) ([]string, error) {
		if host == "kubernetes.default.svc" {
			return []string{"10.96.0.1", "fd00:96::1"}, nil
		}
		return nil, errors.New("no such host")
	}
	own, err := OwnAddresses(context.Background(), Surroundings{
		PodIPs:     []string{"10.1.2.3", "fd10::3", ""},
		NodeIP:     "192.168.0.10",
		APIServers: []string{"https://kubernetes.default.svc", "127.0.0.1:6443", "https://[fd00::5]:8443", ""},
	}, lookup)
	g.Expect(err).NotTo(HaveOccurred())
	_, everything, _ := net.ParseCIDR("0.0.0.0/0")
	_, everything6, _ := net.ParseCIDR("::/0")
	p, err := newEgressPolicy(nil, []*net.IPNet{everything, everything6}, own...)
	g.Expect(err).NotTo(HaveOccurred())
	for addr, want := range map[string]string{
		"10.1.2.3:8082":      "own pod",
		"10.1.2.3:1":         "own pod",
		"[fd10::3]:443":      "own pod",
		"192.168.0.10:10250": "kubelet",
		"192.168.0.10:10255": "kubelet",
		"10.96.0.1:443":      "API server",
		"[fd00:96::1]:443":   "API server",
		"127.0.0.1:6443":     "API server",
		"[fd00::5]:8443":     "API server",
		"192.168.0.10:443":   "",
		"10.96.0.1:8443":     "",
		"127.0.0.1:8080":     "",
		"10.1.2.4:8082":      "",
	} {
		err := p.check(addr)
		if want == "" {
			g.Expect(err).NotTo(HaveOccurred(), addr)
			continue
		}
		g.Expect(errors.Is(err, ErrEgressDenied)).To(BeTrue(), "%s: %v", addr, err)
		g.Expect(err.Error()).To(ContainSubstring(want), addr)
	}
	for _, bad := range []Surroundings{
		{PodIPs: []string{"10.1.2"}},
		{NodeIP: "node-1"},
		{APIServers: []string{"https://unknown.example"}},
		{APIServers: []string{"10.96.0.1"}},
	} {
		_, err := OwnAddresses(context.Background(), bad, lookup)
		g.Expect(err).To(HaveOccurred(), "%+v", bad)
	}
}
