/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// AgentConnector builds A2A clients for Agents. Secrets are read on demand
// through an uncached reader (the operator never caches Secrets cluster-wide),
// and clients are kept for a short while so a poll costs no Secret read.
type AgentConnector struct {
	// SecretReader reads Secrets directly from the API server.
	SecretReader client.Reader
	// DenyCIDRs are denied agent addresses, in addition to a2a's built-in list.
	DenyCIDRs []*net.IPNet
	// AllowCIDRs, when set, are the only agent addresses allowed.
	AllowCIDRs []*net.IPNet
	// MaxResponseBytes bounds every response from an agent.
	MaxResponseBytes int64
	// ClientTTL is how long a client (and the Secret values in it) is reused.
	ClientTTL time.Duration

	mu      sync.Mutex
	clients map[string]cachedClient
}

type cachedClient struct {
	client  a2a.Client
	expires time.Time
}

// Endpoint builds the connection settings for an Agent, reading its Secrets.
func (c *AgentConnector) Endpoint(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Endpoint, error) {
	ep := a2a.Endpoint{URL: agent.Spec.URL, CardURL: agent.Spec.CardURL, AllowedOrigins: agent.Spec.AllowedOrigins,
		Tenant: agent.Spec.Tenant, MaxResponseBytes: c.MaxResponseBytes}
	if tenant != "" {
		ep.Tenant = tenant
	}
	opts := a2a.HTTPOptions{Timeout: 30 * time.Second, DenyCIDRs: c.DenyCIDRs, AllowCIDRs: c.AllowCIDRs}
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
	hc, err := a2a.NewHTTPClient(opts)
	if err != nil {
		return ep, err
	}
	ep.HTTPClient = hc
	return ep, nil
}

// secretValue reads one key; the error names the Secret and key, never the value.
func (c *AgentConnector) secretValue(ctx context.Context, ns string, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	var s corev1.Secret
	if err := c.SecretReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
	}
	if err := checkSecretConsent(&s); err != nil {
		return nil, err
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s/%s has no key %q", ns, ref.Name, ref.Key)
	}
	return v, nil
}

// Client returns a client for the Agent's chosen interface as recorded in its
// status, without reading the card again.
func (c *AgentConnector) Client(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Client, error) {
	return c.client(ctx, agent, tenant, false)
}

// CancelClient is Client for cancels and look-ups of tasks already sent:
// when the Agent's Secrets can no longer be read (deleted with the
// namespace, pruned first), it uses the last client built for the same
// Agent generation, so the cancel carries the credentials the task was sent
// with instead of failing until --cancel-timeout.
func (c *AgentConnector) CancelClient(ctx context.Context, agent *v1alpha1.Agent, tenant string) (a2a.Client, error) {
	return c.client(ctx, agent, tenant, true)
}

// keepForCancels is how long a client outlives its TTL for CancelClient.
const keepForCancels = 15 * time.Minute

func (c *AgentConnector) client(ctx context.Context, agent *v1alpha1.Agent, tenant string, forCancel bool) (a2a.Client, error) {
	if err := endpointCurrent(agent); err != nil {
		return nil, err
	}
	// The generation ends the key: a changed spec gets a new client, and a
	// cancel may fall back to any client built for the same endpoint.
	endpoint := fmt.Sprintf("%s/%s/%s/%s/", agent.UID, agent.Status.Endpoint, agent.Status.Binding, tenant)
	key := endpoint + fmt.Sprint(agent.Generation)
	now := time.Now()
	c.mu.Lock()
	if cc, ok := c.clients[key]; ok && now.Before(cc.expires) {
		c.mu.Unlock()
		return cc.client, nil
	}
	c.mu.Unlock()

	ep, err := c.Endpoint(ctx, agent, tenant)
	if err != nil {
		if forCancel {
			if cc, ok := c.lastFor(endpoint); ok {
				return cc, nil
			}
		}
		return nil, err
	}
	raw, err := a2a.NewClient(ctx, ep, cardFromStatus(agent))
	if err != nil {
		return nil, err
	}
	cl := instrumented{Client: raw, agent: agent.Namespace + "/" + agent.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = map[string]cachedClient{}
	}
	if old, ok := c.clients[key]; ok {
		old.client.Close()
	}
	for k, old := range c.clients { // drop entries kept long enough; they are few
		if !now.Before(old.expires.Add(keepForCancels)) {
			old.client.Close()
			delete(c.clients, k)
		}
	}
	ttl := c.ClientTTL
	if ttl == 0 {
		ttl = time.Minute
	}
	c.clients[key] = cachedClient{client: cl, expires: now.Add(ttl)}
	return cl, nil
}

// lastFor returns the newest client kept for an endpoint, whatever Agent
// generation it was built for (deletion alone bumps the generation). It
// sends the headers it was built with to the endpoint it was built for, so
// new headers never reach an old endpoint.
func (c *AgentConnector) lastFor(endpoint string) (a2a.Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best cachedClient
	found := false
	for k, cc := range c.clients {
		if strings.HasPrefix(k, endpoint) && (!found || cc.expires.After(best.expires)) {
			best, found = cc, true
		}
	}
	return best.client, found
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

func cardFromStatus(agent *v1alpha1.Agent) *a2a.Card {
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
