/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// ErrOriginNotAllowed matches (errors.Is) a request, redirect or card
// interface outside the origins the Agent's owner wrote.
var ErrOriginNotAllowed = errors.New("origin not allowed")

// ReasonOriginNotAllowed is the Error.Reason of a card interface, request or
// redirect outside the Agent's origins.
const ReasonOriginNotAllowed = "OriginNotAllowed"

const (
	schemeHTTP  = "http"
	schemeHTTPS = "https"
)

// originPolicy pins every request of an endpoint to the origins (scheme, host
// and port) its owner wrote: the base URL, the card URL and the listed
// allowed origins. An agent card is data from the network: the interface URL
// it advertises must not decide where the Agent's secret headers (or the push
// token, which travels in the request body) are sent.
type originPolicy struct {
	allowed []string // normalised: scheme://host:port
}

// newOriginPolicy builds the policy of an endpoint. When the owner wrote an
// https URL, no http origin is accepted: a downgrade would send the
// credentials in clear text.
func newOriginPolicy(ep Endpoint) (*originPolicy, error) {
	p := &originPolicy{}
	https := false
	for _, raw := range []string{ep.URL, ep.CardURL} {
		if raw == "" {
			continue
		}
		o, err := originOf(raw)
		if err != nil {
			return nil, err
		}
		https = https || strings.HasPrefix(o, "https://")
		p.allowed = append(p.allowed, o)
	}
	for _, raw := range ep.AllowedOrigins {
		o, err := originOf(raw)
		if err != nil {
			return nil, fmt.Errorf("allowed origin: %w", err)
		}
		p.allowed = append(p.allowed, o)
	}
	if https {
		for _, o := range p.allowed {
			if strings.HasPrefix(o, "http://") {
				return nil, fmt.Errorf("%w: %s is plain http while the Agent's URL is https", ErrOriginNotAllowed, o)
			}
		}
	}
	return p, nil
}

// originOf normalises an http(s) URL to scheme://host:port, with the
// scheme's default port made explicit and the host in lower case.
func originOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %w", err)
	}
	return originOfURL(u)
}

func originOfURL(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch scheme {
	case schemeHTTPS:
		if port == "" {
			port = "443"
		}
	case schemeHTTP:
		if port == "" {
			port = "80"
		}
	default:
		return "", fmt.Errorf("unsupported scheme %q (http or https)", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// allows reports whether a request to u stays within the policy.
func (p *originPolicy) allows(u *url.URL) bool {
	o, err := originOfURL(u)
	return err == nil && slices.Contains(p.allowed, o)
}

// checkURL returns an ErrOriginNotAllowed error for a URL outside the policy.
func (p *originPolicy) checkURL(u *url.URL) error {
	if p.allows(u) {
		return nil
	}
	return fmt.Errorf("%w: %s is not one of the Agent's origins (%s)", ErrOriginNotAllowed, redactedURL(u), strings.Join(p.allowed, ", "))
}

// checkInterface checks the URL of a card interface. A gRPC interface URL
// may be a bare host:port; it is compared as https when the connection uses
// TLS and as http otherwise, so the downgrade rule holds for gRPC too.
func (p *originPolicy) checkInterface(binding, raw string, hasCA bool) error {
	if binding == BindingGRPC {
		target, useTLS, err := grpcTarget(raw, hasCA)
		if err != nil {
			return err
		}
		scheme := schemeHTTP
		if useTLS {
			scheme = schemeHTTPS
		}
		return p.checkURL(&url.URL{Scheme: scheme, Host: strings.TrimPrefix(target, "dns:///")})
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid interface URL: %w", err)
	}
	return p.checkURL(u)
}

// redactedURL drops user info, query and fragment: they may carry secrets.
func redactedURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// originError wraps an origin failure as the Error the controller reports.
func originError(op string, err error) error {
	return &Error{Kind: KindRefused, Op: op, Reason: ReasonOriginNotAllowed, Err: err}
}

// checkCardOrigin checks the card's chosen interface against the endpoint's
// origins.
func checkCardOrigin(ep Endpoint, card *Card) error {
	p, err := newOriginPolicy(ep)
	if err != nil {
		return err
	}
	hasCA := false
	if ep.HTTPClient != nil {
		if at, ok := ep.HTTPClient.Transport.(*agentTransport); ok {
			hasCA = at.settings.hasCA
		}
	}
	return p.checkInterface(card.Binding, card.URL, hasCA)
}

// endpointError classifies a failure to set up an endpoint's client.
func endpointError(op string, err error) error {
	if errors.Is(err, ErrOriginNotAllowed) {
		return originError(op, err)
	}
	return &Error{Kind: KindRefused, Op: op, Reason: ReasonInvalidRequest, Err: err}
}
