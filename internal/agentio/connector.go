/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package agentio owns everything about reaching an agent: the per-Agent
// client cache, the endpoint taken from the Agent's status, the bounded call
// pools, the renewal and poll scheduler and the call metrics. The controller
// submits calls and reads their results; it never waits on the network.
package agentio

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// Connector builds A2A clients for Agents. Secrets are read on demand
// through an uncached reader (the operator never caches Secrets cluster-wide),
// and clients are kept for a short while so a poll costs no Secret read.
type Connector struct {
	// SecretReader reads Secrets directly from the API server.
	SecretReader client.Reader
	// DenyCIDRs are denied agent addresses, in addition to a2a's built-in list.
	DenyCIDRs []*net.IPNet
	// AllowCIDRs, when set, are the only agent addresses allowed.
	AllowCIDRs []*net.IPNet
	// OwnAddresses are the operator's own addresses, always denied.
	OwnAddresses []a2a.DeniedAddress
	// MaxResponseBytes bounds every response from an agent.
	MaxResponseBytes int64
	// ClientTTL is how long a client (and the Secret values in it) is reused.
	ClientTTL time.Duration
	// Tokens are the operator's own ServiceAccount tokens, sent to Agents
	// with spec.auth.serviceAccountToken; nil refuses such Agents.
	Tokens *ServiceAccountTokens

	build   singleflight.Group
	mu      sync.Mutex
	clients map[string]*cachedClient
	// endpoints keeps each Agent generation's endpoint (its Secrets read)
	// for ClientTTL, shared by card reads, probes and clients: one Secret
	// read per Agent generation and TTL, not one per read.
	endpoints map[string]cachedEndpoint
	// transports keeps each Agent's HTTP transport across endpoints
	// (transports.go).
	transports map[types.NamespacedName]*keptTransport
}

type cachedEndpoint struct {
	ep      a2a.Endpoint
	expires time.Time
}

// cachedClient is one built client and the calls using it. An expired
// client leaves the map at once but is closed only when its last call ends.
type cachedClient struct {
	client  a2a.Client
	expires time.Time
	refs    int
	retired bool
}

// Endpoint builds the connection settings for an Agent, reading its
// Secrets. The HTTP transport in them is the Agent's kept one while its
// settings stay the same (transports.go).
func (c *Connector) Endpoint(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Endpoint, error) {
	ep := a2a.Endpoint{URL: agent.Spec.URL, CardURL: agent.Spec.CardURL, AllowedOrigins: agent.Spec.AllowedOrigins,
		Tenant: agent.Spec.Tenant, MaxResponseBytes: c.MaxResponseBytes}
	if tenant != "" {
		ep.Tenant = tenant
	}
	opts := a2a.HTTPOptions{Timeout: 30 * time.Second, DenyCIDRs: c.DenyCIDRs, AllowCIDRs: c.AllowCIDRs, OwnAddresses: c.OwnAddresses}
	if agent.Spec.RequestTimeout != nil {
		opts.Timeout = agent.Spec.RequestTimeout.Duration
	}
	if t := agent.Spec.TLS; t != nil {
		opts.InsecureSkipVerify = t.InsecureSkipVerify
		if t.CABundle != nil {
			ca, err := c.secretValue(ctx, agent.Namespace, *t.CABundle)
			if err != nil {
				return ep, err
			}
			opts.CAPEM = ca
		}
	}
	if len(agent.Spec.Headers) > 0 {
		ep.Headers = http.Header{}
		for _, h := range agent.Spec.Headers {
			v, err := c.secretValue(ctx, agent.Namespace, h.ValueFrom)
			if err != nil {
				return ep, err
			}
			ep.Headers.Set(h.Name, string(v))
		}
	}
	if a := agent.Spec.Auth; a != nil && a.ServiceAccountToken != nil {
		ep.BearerToken = c.bearerToken(*a.ServiceAccountToken)
	}
	if n := agent.Spec.MaxConcurrentCalls; n != nil {
		opts.IdleConnsPerHost = int(*n) // each place of the pool keeps its connection
	}
	hc, err := c.httpClient(agent, ep, opts)
	if err != nil {
		return ep, err
	}
	ep.HTTPClient = hc
	return ep, nil
}

// bearerToken asks for the token with every request: the cache in Tokens
// makes that free until the token is due for renewal, and a client kept
// for ClientTTL never sends an expired one.
func (c *Connector) bearerToken(sa v1alpha1.ServiceAccountTokenAuth) func(context.Context) (string, error) {
	var seconds int64
	if sa.ExpirationSeconds != nil {
		seconds = *sa.ExpirationSeconds
	}
	return func(ctx context.Context) (string, error) {
		return c.Tokens.Token(ctx, sa.Audience, seconds)
	}
}

// endpoint is Endpoint, reused for the Agent's generation within ClientTTL.
func (c *Connector) endpoint(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Endpoint, error) {
	key := fmt.Sprintf("%s/%d/%s", agent.UID, agent.Generation, tenant)
	now := time.Now()
	c.mu.Lock()
	cached, ok := c.endpoints[key]
	c.mu.Unlock()
	if ok && now.Before(cached.expires) {
		return cached.ep, nil
	}
	ep, err := c.Endpoint(ctx, agent, tenant)
	if err != nil {
		return ep, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endpoints == nil {
		c.endpoints = map[string]cachedEndpoint{}
	}
	for k, e := range c.endpoints { // drop what expired; they are few
		if !now.Before(e.expires) {
			delete(c.endpoints, k)
		}
	}
	c.endpoints[key] = cachedEndpoint{ep: ep, expires: now.Add(c.ttl())}
	return ep, nil
}

func (c *Connector) ttl() time.Duration {
	if c.ClientTTL == 0 {
		return time.Minute
	}
	return c.ClientTTL
}

// secretValue reads one key; the error names the Secret and key, never the value.
func (c *Connector) secretValue(ctx context.Context, ns string, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	var s corev1.Secret
	if err := c.SecretReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
	}
	if err := CheckSecretConsent(&s); err != nil {
		return nil, err
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s/%s has no key %q", ns, ref.Name, ref.Key)
	}
	return v, nil
}

// Client returns a client for the Agent's chosen interface as recorded in its
// status, without reading the card again, and a release function the caller
// runs when its call is over. Concurrent callers with the same key share one
// build; a client is never closed while a call still uses it.
func (c *Connector) Client(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Client, func(), error) {
	return c.client(ctx, agent, tenant, false)
}

// CancelClient is Client for cancels and look-ups of tasks already sent:
// when the Agent's Secrets can no longer be read (deleted with the
// namespace, pruned first), it uses the last client built for the same
// Agent generation, so the cancel carries the credentials the task was sent
// with instead of failing until --cancel-timeout.
func (c *Connector) CancelClient(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Client, func(), error) {
	return c.client(ctx, agent, tenant, true)
}

// keepForCancels is how long a client outlives its TTL for CancelClient.
const keepForCancels = 15 * time.Minute

func (c *Connector) client(ctx context.Context, agent *v1alpha1.Agent, tenant string, forCancel bool) (a2a.Client, func(), error) {
	if err := endpointCurrent(agent); err != nil {
		return nil, nil, err
	}
	// The generation ends the key: a changed spec gets a new client, and a
	// cancel may fall back to any client built for the same endpoint.
	endpoint := fmt.Sprintf("%s/%s/%s/%s/", agent.UID, agent.Status.Endpoint, agent.Status.Binding, tenant)
	key := endpoint + fmt.Sprint(agent.Generation)
	if cc := c.acquire(key, false); cc != nil {
		return cc.client, c.releaser(cc), nil
	}
	_, err, _ := c.build.Do(key, func() (any, error) {
		if cc := c.acquire(key, false); cc != nil { // built while we waited
			c.release(cc)
			return nil, nil
		}
		ep, err := c.endpoint(ctx, agent, tenant)
		if err != nil {
			return nil, err
		}
		raw, err := a2a.NewClient(ctx, ep, CardFromStatus(agent))
		if err != nil {
			return nil, err
		}
		c.store(key, instrumented{Client: raw, agent: agentLabelValue(agent.Namespace, agent.Name)})
		return nil, nil
	})
	if err != nil {
		if forCancel {
			if cc := c.lastFor(endpoint); cc != nil {
				return cc.client, c.releaser(cc), nil
			}
		}
		return nil, nil, err
	}
	// Just built (by this caller or one it waited for): use it even when a
	// very short ClientTTL has passed meanwhile.
	if cc := c.acquire(key, true); cc != nil {
		return cc.client, c.releaser(cc), nil
	}
	return nil, nil, fmt.Errorf("the client for agent %s/%s was dropped while it was built", agent.Namespace, agent.Name)
}

// lastFor returns (counted in) the newest client kept for an endpoint,
// whatever Agent generation it was built for (deletion alone bumps the
// generation). It sends the headers it was built with to the endpoint it
// was built for, so new headers never reach an old endpoint.
func (c *Connector) lastFor(endpoint string) *cachedClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *cachedClient
	for k, cc := range c.clients {
		if strings.HasPrefix(k, endpoint) && (best == nil || cc.expires.After(best.expires)) {
			best = cc
		}
	}
	if best != nil {
		best.refs++
	}
	return best
}

// endpointCurrent refuses an endpoint read for an earlier generation of the
// Agent: a changed Agent (new URL, new headers) never sends its new headers
// to the old endpoint; calls wait until the card is read again.
func endpointCurrent(agent *v1alpha1.Agent) error {
	if agent.Status.ObservedGeneration != agent.Generation {
		return fmt.Errorf("the Agent %s/%s changed (generation %d, card read for %d); waiting for its card to be read again",
			agent.Namespace, agent.Name, agent.Generation, agent.Status.ObservedGeneration)
	}
	return nil
}

// acquire returns the client for key and counts the caller in; an expired
// client is returned only when stale is true (a cancel whose Secrets are
// gone), for keepForCancels past its TTL.
func (c *Connector) acquire(key string, stale bool) *cachedClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for k, cc := range c.clients { // retire entries kept long enough; they are few
		if !now.Before(cc.expires.Add(keepForCancels)) {
			delete(c.clients, k)
			cc.retired = true
			if cc.refs == 0 {
				cc.client.Close()
			}
		}
	}
	cc, ok := c.clients[key]
	if !ok || (!stale && !now.Before(cc.expires)) {
		return nil
	}
	cc.refs++
	return cc
}

func (c *Connector) store(key string, cl a2a.Client) {
	ttl := c.ttl()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = map[string]*cachedClient{}
	}
	if old, ok := c.clients[key]; ok {
		old.retired = true
		if old.refs == 0 {
			old.client.Close()
		}
	}
	c.clients[key] = &cachedClient{client: cl, expires: time.Now().Add(ttl)}
}

func (c *Connector) releaser(cc *cachedClient) func() {
	var once sync.Once
	return func() { once.Do(func() { c.release(cc) }) }
}

func (c *Connector) release(cc *cachedClient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc.refs--
	if cc.refs == 0 && cc.retired {
		cc.client.Close()
	}
}

// CardFromStatus is the card as the Agent controller recorded it.
func CardFromStatus(agent *v1alpha1.Agent) *a2a.Card {
	st := agent.Status
	card := &a2a.Card{
		Name: st.CardName, ProtocolVersion: st.ProtocolVersion, Binding: st.Binding, URL: st.Endpoint, Tenant: st.Tenant,
		Streaming: st.Streaming, PushNotifications: st.PushNotifications,
		Lease: st.Extensions.Lease, Budget: st.Extensions.Budget,
	}
	for _, s := range st.Skills {
		card.Skills = append(card.Skills, a2a.Skill{ID: s.ID, Name: s.Name})
	}
	return card
}
