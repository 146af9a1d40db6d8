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
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestEgressPolicyRefusesMetadataAndAllowsLoopback(t *testing.T) {
	g := NewWithT(t)
	hc, err := NewHTTPClient(HTTPOptions{DenyCIDRs: DefaultDenyCIDRs(), Timeout: 5 * time.Second})
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

func TestDefaultDenyCIDRs(t *testing.T) {
	g := NewWithT(t)
	denied := func(ip string) bool { return checkEgress(net.JoinHostPort(ip, "80"), DefaultDenyCIDRs()) != nil }
	for _, ip := range []string{"169.254.169.254", "169.254.1.1", "fe80::1", "fd00:ec2::254"} {
		g.Expect(denied(ip)).To(BeTrue(), ip)
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.0.0.1", "8.8.8.8"} {
		g.Expect(denied(ip)).To(BeFalse(), ip)
	}
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
