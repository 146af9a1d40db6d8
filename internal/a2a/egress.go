/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// builtinDeny are addresses that are never a legitimate agent: they are
// denied whatever the operator's flags say. Addresses that embed an IPv4
// address in IPv6 are denied as a whole: through a translator they reach
// IPv4 addresses (loopback, metadata) that the IPv4 rules would refuse.
var builtinDeny = []struct{ cidr, why, except string }{
	{cidr: "0.0.0.0/8", why: "unspecified (\"this host\")"},
	{cidr: "::/128", why: "unspecified"},
	{cidr: "169.254.0.0/16", why: "link-local (cloud metadata among them)"},
	{cidr: "fe80::/10", why: "link-local"},
	{cidr: "169.254.169.254/32", why: "cloud metadata (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack)"},
	{cidr: "169.254.170.2/32", why: "AWS ECS task metadata"},
	{cidr: "169.254.170.23/32", why: "AWS EKS Pod Identity agent (credentials)"},
	{cidr: "fd00:ec2::254/128", why: "AWS metadata over IPv6"},
	{cidr: "fd00:ec2::23/128", why: "AWS EKS Pod Identity agent over IPv6 (credentials)"},
	{cidr: "fd00:ec2::253/128", why: "AWS DNS resolver over IPv6"},
	{cidr: "fd00:ec2::123/128", why: "AWS time server over IPv6"},
	{cidr: "fd20:ce::254/128", why: "GCP metadata over IPv6"},
	{cidr: "fd00:c1::a9fe:a9fe/128", why: "OCI metadata over IPv6"},
	{cidr: "100.100.100.200/32", why: "Alibaba Cloud metadata"},
	{cidr: "168.63.129.16/32", why: "Azure host (wire server)"},
	{cidr: "::ffff:0:0/96", why: "IPv4-mapped IPv6"},
	{cidr: "::ffff:0:0:0/96", why: "IPv4-translated IPv6 (SIIT)"},
	// ::1 (loopback) lies in ::/96 but is not an IPv4 address: it is left
	// to the deny list (the chart denies it).
	{cidr: "::/96", why: "IPv4-compatible IPv6 (deprecated)", except: "::1"},
	{cidr: "64:ff9b::/96", why: "NAT64 (well-known prefix)"},
	{cidr: "64:ff9b:1::/48", why: "NAT64 (local-use prefix)"},
	{cidr: "2002::/16", why: "6to4"},
	{cidr: "2001::/32", why: "Teredo"},
}

// BuiltinDenyCIDRs lists the addresses the egress policy always refuses.
func BuiltinDenyCIDRs() []string {
	out := make([]string, len(builtinDeny))
	for i, d := range builtinDeny {
		out[i] = d.cidr
	}
	return out
}

// egressPolicy decides which dialled addresses an agent client may reach:
// never the built-in list or the operator's deny list; when an allow list is
// given, only addresses within it.
type egressPolicy struct {
	deny   []netip.Prefix
	why    []string     // why deny[i] is denied
	except []netip.Addr // an address deny[i] leaves alone (zero: none)
	allow  []netip.Prefix
	// own are the operator's own addresses (its pod, its node's kubelet,
	// the API server), denied on one port or all.
	own []DeniedAddress
}

// DeniedAddress is an address the operator itself uses, denied to agents:
// on Port only, or on every port when Port is 0.
type DeniedAddress struct {
	Addr netip.Addr
	Port uint16
	Why  string
}

func newEgressPolicy(deny, allow []*net.IPNet, own ...DeniedAddress) (*egressPolicy, error) {
	p := &egressPolicy{own: own}
	for _, d := range builtinDeny {
		p.deny = append(p.deny, netip.MustParsePrefix(d.cidr))
		p.why = append(p.why, d.why)
		var except netip.Addr
		if d.except != "" {
			except = netip.MustParseAddr(d.except)
		}
		p.except = append(p.except, except)
	}
	for _, n := range deny {
		pf, err := prefixOf(n)
		if err != nil {
			return nil, fmt.Errorf("deny list: %w", err)
		}
		p.deny = append(p.deny, pf)
		p.why = append(p.why, "the operator's deny list")
		p.except = append(p.except, netip.Addr{})
	}
	for _, n := range allow {
		pf, err := prefixOf(n)
		if err != nil {
			return nil, fmt.Errorf("allow list: %w", err)
		}
		p.allow = append(p.allow, pf)
	}
	return p, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, error) {
	if n == nil {
		return netip.Prefix{}, fmt.Errorf("empty network")
	}
	ones, bits := n.Mask.Size()
	addr, ok := netip.AddrFromSlice(n.IP)
	if !ok || bits == 0 {
		return netip.Prefix{}, fmt.Errorf("invalid network %v", n)
	}
	if bits == 32 {
		addr = addr.Unmap()
	}
	return netip.PrefixFrom(addr, ones).Masked(), nil
}

// check returns an ErrEgressDenied error for an address (host:port or a
// bare IP) the policy refuses.
func (p *egressPolicy) check(address string) error {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		host, portText = address, ""
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return &egressDeniedError{addr: host, why: "not an IP address"} // dialled addresses are always IPs
	}
	addr = addr.WithZone("")
	for i, pf := range p.deny {
		if pf.Contains(addr) && addr != p.except[i] {
			return &egressDeniedError{addr: addr.String(), why: p.why[i]}
		}
	}
	port, _ := strconv.ParseUint(portText, 10, 16)
	for _, o := range p.own {
		if o.Addr.Unmap() == addr.Unmap() && (o.Port == 0 || uint64(o.Port) == port) {
			return &egressDeniedError{addr: address, why: o.Why}
		}
	}
	if len(p.allow) == 0 {
		return nil
	}
	for _, pf := range p.allow {
		if pf.Contains(addr) {
			return nil
		}
	}
	return &egressDeniedError{addr: addr.String(), why: "not in the operator's allow list"}
}
