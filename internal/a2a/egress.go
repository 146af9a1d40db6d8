/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// builtinDeny are addresses that are never a legitimate agent: they are
// denied whatever the operator's flags say. Addresses that embed an IPv4
// address in IPv6 are denied as a whole: through a translator they reach
// IPv4 addresses (loopback, metadata) that the IPv4 rules would refuse.
var builtinDeny = []struct{ cidr, why string }{
	{"0.0.0.0/8", "unspecified (\"this host\")"},
	{"::/128", "unspecified"},
	{"169.254.0.0/16", "link-local (cloud metadata among them)"},
	{"fe80::/10", "link-local"},
	{"169.254.169.254/32", "cloud metadata (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack)"},
	{"169.254.170.2/32", "AWS ECS task metadata"},
	{"fd00:ec2::254/128", "AWS metadata over IPv6"},
	{"fd00:ec2::23/128", "AWS time and DNS over IPv6"},
	{"100.100.100.200/32", "Alibaba Cloud metadata"},
	{"168.63.129.16/32", "Azure host (wire server)"},
	{"::ffff:0:0/96", "IPv4-mapped IPv6"},
	{"::ffff:0:0:0/96", "IPv4-translated IPv6 (SIIT)"},
	{"64:ff9b::/96", "NAT64 (well-known prefix)"},
	{"64:ff9b:1::/48", "NAT64 (local-use prefix)"},
	{"2002::/16", "6to4"},
	{"2001::/32", "Teredo"},
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
	deny  []netip.Prefix
	why   []string // why deny[i] is denied
	allow []netip.Prefix
}

func newEgressPolicy(deny, allow []*net.IPNet) (*egressPolicy, error) {
	p := &egressPolicy{}
	for _, d := range builtinDeny {
		p.deny = append(p.deny, netip.MustParsePrefix(d.cidr))
		p.why = append(p.why, d.why)
	}
	for _, n := range deny {
		pf, err := prefixOf(n)
		if err != nil {
			return nil, fmt.Errorf("deny list: %w", err)
		}
		p.deny = append(p.deny, pf)
		p.why = append(p.why, "the operator's deny list")
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
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return &egressDeniedError{addr: host, why: "not an IP address"} // dialled addresses are always IPs
	}
	addr = addr.WithZone("")
	for i, pf := range p.deny {
		if pf.Contains(addr) {
			return &egressDeniedError{addr: addr.String(), why: p.why[i]}
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
