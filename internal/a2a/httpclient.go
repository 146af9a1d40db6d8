/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// DefaultHTTPTimeout bounds one HTTP exchange when HTTPOptions.Timeout is 0.
const DefaultHTTPTimeout = 30 * time.Second

// ErrEgressDenied matches (errors.Is) a dial refused by the egress policy.
var ErrEgressDenied = errors.New("denied by the egress policy")

type egressDeniedError struct{ addr, why string }

func (e *egressDeniedError) Error() string {
	return fmt.Sprintf("address %s is denied by the egress policy: %s", e.addr, e.why)
}

func (e *egressDeniedError) Is(target error) bool { return target == ErrEgressDenied }

// HTTPOptions configures the HTTP client used to reach agents.
type HTTPOptions struct {
	// Timeout bounds each HTTP exchange; 0 means DefaultHTTPTimeout.
	Timeout time.Duration
	// CAPEM is added to the system roots to verify agent certificates.
	CAPEM []byte
	// InsecureSkipVerify turns TLS verification off (an Agent opting out).
	InsecureSkipVerify bool
	// DenyCIDRs are refused at dial time, in addition to the built-in list
	// (BuiltinDenyCIDRs), which is always refused.
	DenyCIDRs []*net.IPNet
	// AllowCIDRs, when not empty, are the only addresses that may be dialled
	// (minus the denied ones).
	AllowCIDRs []*net.IPNet
	// OwnAddresses are the operator's own addresses (see OwnAddresses),
	// refused whatever the allow list says.
	OwnAddresses []DeniedAddress
	// IdleConnsPerHost is how many idle connections to the agent are kept
	// alive for the next calls, at least DefaultIdleConnsPerHost: an Agent
	// whose pool runs more calls at once than that would close and open
	// connections again and again under load.
	IdleConnsPerHost int
}

// DefaultIdleConnsPerHost is the least HTTPOptions.IdleConnsPerHost, more
// than an Agent's default pool of calls.
const DefaultIdleConnsPerHost = 10

// NewHTTPClient builds a client with verified TLS (unless opted out), an
// optional extra CA and the egress policy. The policy is checked against the
// address actually dialled, after DNS resolution, so a name that resolves (or
// re-resolves) to a denied address cannot get through. No proxy is used: a
// proxy would hide the real destination from the policy.
//
// The client also carries these settings for the gRPC binding, which dials
// with the same TLS configuration, egress policy and timeout (see
// Endpoint.HTTPClient).
func NewHTTPClient(opts HTTPOptions) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.InsecureSkipVerify} //nolint:gosec // an explicit per-Agent opt-out
	if len(opts.CAPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(opts.CAPEM) {
			return nil, errors.New("no certificate found in the CA bundle")
		}
		tlsConfig.RootCAs = pool
	}
	egress, err := newEgressPolicy(opts.DenyCIDRs, opts.AllowCIDRs, opts.OwnAddresses...)
	if err != nil {
		return nil, err
	}
	settings := dialSettings{
		tls:    tlsConfig,
		hasCA:  len(opts.CAPEM) > 0,
		egress: egress,
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	idle := max(opts.IdleConnsPerHost, DefaultIdleConnsPerHost)
	return &http.Client{
		Timeout: timeout,
		Transport: &agentTransport{
			Transport: &http.Transport{
				DialContext:            egressDialer(settings.egress).DialContext,
				TLSClientConfig:        tlsConfig.Clone(),
				ForceAttemptHTTP2:      true,
				MaxIdleConns:           max(100, idle),
				MaxIdleConnsPerHost:    idle,
				IdleConnTimeout:        90 * time.Second,
				TLSHandshakeTimeout:    10 * time.Second,
				ExpectContinueTimeout:  time.Second,
				MaxResponseHeaderBytes: MaxResponseHeaderBytes,
			},
			settings: settings,
		},
	}, nil
}

// agentTransport is the transport of the clients NewHTTPClient builds. It
// keeps the raw settings so that the gRPC binding can apply them too.
type agentTransport struct {
	*http.Transport
	settings dialSettings
}

// dialSettings is what both bindings need at dial time.
type dialSettings struct {
	tls    *tls.Config // never modified: clone before use
	hasCA  bool        // a CA bundle was given (the gRPC binding then uses TLS)
	egress *egressPolicy
}

// egressDialer is the dialer of both bindings: it refuses denied addresses
// before connecting, checking the address actually dialled.
func egressDialer(policy *egressPolicy) *net.Dialer {
	return &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			return policy.check(address)
		},
	}
}
