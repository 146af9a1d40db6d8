/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// The operator's own surroundings are never an agent: its pod (the metrics,
// health and push ports, a sidecar's), its node's kubelet and the API
// server. An Agent pointed at them would make the operator call them with
// that Agent's headers, and show what they answer in status. They are
// denied by default (--agent-deny-own-addresses), whatever the allow list says.

// kubeletPorts are the kubelet's ports on the operator's node: the API and
// the read-only port.
var kubeletPorts = []uint16{10250, 10255}

// Surroundings are where the operator runs, as the pod sees it.
type Surroundings struct {
	// PodIPs are the pod's addresses (the downward API's status.podIPs).
	PodIPs []string
	// NodeIP is the node's address (status.hostIP).
	NodeIP string
	// APIServers are the API server's URLs or host:port pairs (the
	// client's host, KUBERNETES_SERVICE_HOST:PORT).
	APIServers []string
}

// OwnAddresses lists the addresses to deny for these surroundings; host
// names of the API server are resolved with lookup. Empty entries are
// skipped; anything else that cannot be read is an error, so a typo never
// silently leaves an address open.
func OwnAddresses(ctx context.Context, s Surroundings, lookup func(context.Context, string) ([]string, error)) ([]DeniedAddress, error) {
	var out []DeniedAddress
	for _, ip := range s.PodIPs {
		if ip = strings.TrimSpace(ip); ip == "" {
			continue
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("pod IP %q: %w", ip, err)
		}
		out = append(out, DeniedAddress{Addr: a, Why: "the operator's own pod"})
	}
	if ip := strings.TrimSpace(s.NodeIP); ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("node IP %q: %w", ip, err)
		}
		for _, p := range kubeletPorts {
			out = append(out, DeniedAddress{Addr: a, Port: p, Why: "the kubelet of the operator's node"})
		}
	}
	for _, server := range s.APIServers {
		if server = strings.TrimSpace(server); server == "" {
			continue
		}
		host, port, err := apiServerHostPort(server)
		if err != nil {
			return nil, err
		}
		addrs := []string{host}
		if _, err := netip.ParseAddr(host); err != nil {
			if addrs, err = lookup(ctx, host); err != nil {
				return nil, fmt.Errorf("resolving the API server %q: %w", host, err)
			}
		}
		for _, h := range addrs {
			a, err := netip.ParseAddr(h)
			if err != nil {
				return nil, fmt.Errorf("API server address %q: %w", h, err)
			}
			out = append(out, DeniedAddress{Addr: a, Port: port, Why: "the Kubernetes API server"})
		}
	}
	return out, nil
}

// apiServerHostPort reads https://host[:port] or host:port; an https URL
// without a port is port 443.
func apiServerHostPort(s string) (string, uint16, error) {
	hostPort := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "", 0, fmt.Errorf("API server %q is not a URL", s)
		}
		hostPort = u.Host
		if u.Port() == "" {
			def := "443"
			if u.Scheme == schemeHTTP {
				def = "80"
			}
			hostPort = net.JoinHostPort(u.Hostname(), def)
		}
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, fmt.Errorf("API server %q: %w", s, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("API server %q: invalid port %q", s, portText)
	}
	return host, uint16(port), nil
}
