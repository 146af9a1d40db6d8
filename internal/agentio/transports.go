/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// An Agent's HTTP transport, and so its kept-alive connections, outlives
// the endpoints built from it. An endpoint is built again every ClientTTL
// (its Secrets read again); a new transport each time opened every
// connection of the Agent's pool again (a TLS handshake each, at an agent
// that speaks TLS) and left the old ones idle until they timed out. A
// transport is kept while what it was built for stays the same: the Agent
// (its UID), its URLs, its TLS settings and CA bundle, its credentials
// (header values, the token's audience) and its pool's size. A change of
// any of them gets a new transport, and the old one's idle connections are
// closed: calls still on them end as they would have.

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

type keptTransport struct {
	// built names what the transport was built for (transportFingerprint):
	// a hash, so no Secret value is kept for the comparison.
	built [sha256.Size]byte
	hc    *http.Client
	used  time.Time
}

// transportIdle is how long a transport no endpoint was built from is
// kept: longer than any client built from it is kept for cancels.
func (c *Connector) transportIdle() time.Duration { return 2*c.ttl() + keepForCancels }

// httpClient returns the Agent's kept HTTP client when it was built for
// the same settings, else a new one that replaces it. Transports unused
// for transportIdle are closed and dropped on the way.
func (c *Connector) httpClient(agent *v1alpha1.Agent, ep a2a.Endpoint, opts a2a.HTTPOptions) (*http.Client, error) {
	key := types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}
	built := transportFingerprint(agent, ep, opts)
	if hc := c.keptHTTPClient(key, built); hc != nil {
		return hc, nil
	}
	hc, err := a2a.NewHTTPClient(opts) // outside the lock: a CA bundle copies the system's roots
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.transports[key]
	if ok && old.built == built { // built meanwhile by another caller
		old.used = time.Now()
		return old.hc, nil
	}
	if ok {
		old.hc.CloseIdleConnections()
	}
	if c.transports == nil {
		c.transports = map[types.NamespacedName]*keptTransport{}
	}
	c.transports[key] = &keptTransport{built: built, hc: hc, used: time.Now()}
	return hc, nil
}

// keptHTTPClient returns the Agent's transport if it was built for built.
func (c *Connector) keptHTTPClient(key types.NamespacedName, built [sha256.Size]byte) *http.Client {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, kept := range c.transports { // they are few: one per Agent
		if now.Sub(kept.used) > c.transportIdle() {
			kept.hc.CloseIdleConnections()
			delete(c.transports, k)
		}
	}
	if kept, ok := c.transports[key]; ok && kept.built == built {
		kept.used = now
		return kept.hc
	}
	return nil
}

// ForgetAgent closes the idle connections of an Agent that is gone and
// forgets its transport. Clients still kept for its cancels dial again.
func (c *Connector) ForgetAgent(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.transports[key]; ok {
		kept.hc.CloseIdleConnections()
		delete(c.transports, key)
	}
}

// transportFingerprint hashes what a transport is built for.
func transportFingerprint(agent *v1alpha1.Agent, ep a2a.Endpoint, opts a2a.HTTPOptions) [sha256.Size]byte {
	h := sha256.New()
	field(h, string(agent.UID), ep.URL, ep.CardURL, opts.Timeout.String(), fmt.Sprint(opts.InsecureSkipVerify),
		string(opts.CAPEM), fmt.Sprint(opts.IdleConnsPerHost))
	for _, name := range slices.Sorted(maps.Keys(ep.Headers)) {
		field(h, name, fmt.Sprint(len(ep.Headers[name])))
		field(h, ep.Headers[name]...)
	}
	if a := agent.Spec.Auth; a != nil && a.ServiceAccountToken != nil {
		field(h, "token", a.ServiceAccountToken.Audience, fmt.Sprint(ptr.Deref(a.ServiceAccountToken.ExpirationSeconds, 0)))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// field writes each value after its length, so values never run together.
func field(h hash.Hash, values ...string) {
	var buf [64]byte
	for _, v := range values {
		b := strconv.AppendInt(buf[:0], int64(len(v)), 10)
		b = append(b, ':')
		_, _ = h.Write(append(b, v...))
	}
}
