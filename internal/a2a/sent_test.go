/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"net"
	"testing"

	. "github.com/onsi/gomega"
)

// Only a request that never left the operator may be sent again: a closed
// port and a denied address are such; an answer of any status is not.
func TestNeverSentOnlyForRequestsThatDidNotLeave(t *testing.T) {
	g := NewWithT(t)
	send := func(url string, ep Endpoint) error {
		ep.URL = url
		c, err := NewClient(context.Background(), ep, &Card{ProtocolVersion: ProtocolV1, Binding: BindingJSONRPC, URL: url})
		g.Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_, err = c.Send(context.Background(), SendRequest{MessageID: "m", Text: "hi"})
		g.Expect(err).To(HaveOccurred())
		return err
	}
	g.Expect(NeverSent(send(closedURL(t), Endpoint{}))).To(BeTrue(), "connection refused")

	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	hc, err := NewHTTPClient(HTTPOptions{DenyCIDRs: []*net.IPNet{loopback}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(NeverSent(send(newStatusServer(t, 200), Endpoint{HTTPClient: hc}))).To(BeTrue(), "egress policy")

	for _, code := range []int{400, 429, 502, 504} {
		g.Expect(NeverSent(send(newStatusServer(t, code), Endpoint{}))).To(BeFalse(), "status %d", code)
	}
	g.Expect(NeverSent(nil)).To(BeFalse())
}
