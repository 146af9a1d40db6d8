/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/tether-dev/tether/internal/textsafe"
)

// Protocol versions and bindings as recorded in Card.
const (
	ProtocolV1  = "1.0"
	ProtocolV03 = "0.3"

	BindingJSONRPC  = string(a2a.TransportProtocolJSONRPC)
	BindingHTTPJSON = string(a2a.TransportProtocolHTTPJSON)
	BindingGRPC     = string(a2a.TransportProtocolGRPC)
)

const opResolveCard = "ResolveCard"

// ResolveCard reads the agent card (1.0 or 0.3 format) and chooses the
// interface to talk to: 1.0 JSON-RPC, then 1.0 HTTP+JSON, then 1.0 gRPC, then
// 0.3 JSON-RPC, then 0.3 HTTP+JSON; among equals the card's order (its preference) wins. The card
// itself is always read over HTTP.
func ResolveCard(ctx context.Context, ep Endpoint) (*Card, error) {
	raw, body, err := readWireCard(ctx, ep)
	if err != nil {
		return nil, err
	}
	sig := VerifyCard(body, ep.CardKeys)
	if sig.Verified {
		// Use what was signed, nothing beside it: the signed content is the
		// card without its empty values, which read as absent ones do.
		if raw, err = signedCard(body); err != nil {
			return nil, localError(opResolveCard, ReasonUnsupported, err)
		}
	}
	card, err := cardFromWire(raw)
	if err != nil {
		return nil, localError(opResolveCard, ReasonUnsupported, err)
	}
	card.Signature = sig
	if err := checkCardOrigin(ep, card); err != nil {
		return nil, originError(opResolveCard,
			fmt.Errorf("the agent card's %s interface: %w; list its origin in spec.allowedOrigins to trust it", card.Binding, err))
	}
	return card, nil
}

// signedCard parses the content a card's signature covers.
func signedCard(body []byte) (*a2a.AgentCard, error) {
	payload, err := CardPayload(body)
	if err != nil {
		return nil, err
	}
	return a2av0.NewAgentCardParser()(payload)
}

// readWireCard reads and parses the agent card, either format; body is
// the card's JSON as it was served.
func readWireCard(ctx context.Context, ep Endpoint) (*a2a.AgentCard, []byte, error) {
	hc, err := endpointHTTPClient(ep)
	if err != nil {
		return nil, nil, endpointError(opResolveCard, err)
	}
	// The 0.3 parser reads both formats: it keeps supportedInterfaces when
	// present and otherwise derives them from url/preferredTransport.
	var body []byte
	parse := a2av0.NewAgentCardParser()
	resolver := &agentcard.Resolver{Client: hc, CardParser: func(b []byte) (*a2a.AgentCard, error) {
		body = b
		return parse(b)
	}}
	// Agents that speak both versions answer a request without A2A-Version
	// with their 0.3 card; ask for the 1.0 one (a 0.3 agent ignores this).
	base, opts := ep.URL, []agentcard.ResolveOption{agentcard.WithRequestHeader("A2A-Version", ProtocolV1)}
	if ep.CardURL != "" {
		base, opts = ep.CardURL, append(opts, agentcard.WithPath(""))
	}
	if base == "" {
		return nil, nil, localError(opResolveCard, ReasonInvalidRequest, errors.New("the endpoint has no URL"))
	}
	ctx, ci := withCallInfo(ctx)
	raw, err := resolver.Resolve(ctx, base, opts...)
	if err != nil {
		if notOK, ok := errors.AsType[*agentcard.ErrStatusNotOK](err); ok {
			ci.setStatus(notOK.StatusCode)
		}
		return nil, nil, ci.wrap(opResolveCard, err)
	}
	return raw, body, nil
}

// cardFromWire keeps what the operator needs of a card, with the chosen interface.
func cardFromWire(c *a2a.AgentCard) (*Card, error) {
	iface, version := chooseInterface(c.SupportedInterfaces)
	if iface == nil {
		var have []string
		for _, i := range c.SupportedInterfaces {
			if i != nil {
				have = append(have, textsafe.Line(fmt.Sprintf("%s %s", i.ProtocolBinding, i.ProtocolVersion)))
			}
		}
		return nil, fmt.Errorf("%w: no usable interface in the agent card (has: %s)", ErrUnsupported, strings.Join(have, ", "))
	}
	if len(iface.URL) > MaxInterfaceURLLength || len(iface.Tenant) > MaxTenantLength {
		return nil, fmt.Errorf("%w: the chosen interface's URL (%d bytes) or tenant (%d bytes) is too long",
			ErrUnsupported, len(iface.URL), len(iface.Tenant))
	}
	if textsafe.Line(iface.URL) != iface.URL || textsafe.Line(iface.Tenant) != iface.Tenant {
		// Both are used as they are, so they cannot be escaped.
		return nil, fmt.Errorf("%w: the chosen interface's URL or tenant holds control characters", ErrUnsupported)
	}
	out := &Card{
		Name:              cut(textsafe.Line(c.Name), MaxCardNameLength),
		ProtocolVersion:   version,
		Binding:           string(iface.ProtocolBinding),
		URL:               iface.URL,
		Tenant:            iface.Tenant,
		Streaming:         c.Capabilities.Streaming,
		PushNotifications: c.Capabilities.PushNotifications,
	}
	for _, s := range c.Skills {
		if len(out.Skills) == MaxSkills {
			break
		}
		if len(s.ID) > MaxSkillFieldLength || textsafe.Line(s.ID) != s.ID {
			continue // a cut or escaped id would route elsewhere
		}
		out.Skills = append(out.Skills, Skill{ID: s.ID, Name: cut(textsafe.Line(s.Name), MaxSkillFieldLength)})
	}
	for _, e := range c.Capabilities.Extensions {
		switch e.URI {
		case LeaseExtensionURI:
			out.Lease = true
		case BudgetExtensionURI:
			out.Budget = true
		case TraceContextExtensionURI:
			out.TraceContext = true
		}
	}
	return out, nil
}

// chooseInterface returns the preferred usable interface and its normalised
// protocol version.
func chooseInterface(ifaces []*a2a.AgentInterface) (*a2a.AgentInterface, string) {
	rank := func(i *a2a.AgentInterface) int {
		switch v := normaliseVersion(string(i.ProtocolVersion)); {
		case v == ProtocolV1 && i.ProtocolBinding == a2a.TransportProtocolJSONRPC:
			return 0
		case v == ProtocolV1 && i.ProtocolBinding == a2a.TransportProtocolHTTPJSON:
			return 1
		case v == ProtocolV1 && i.ProtocolBinding == a2a.TransportProtocolGRPC:
			return 2
		case v == ProtocolV03 && i.ProtocolBinding == a2a.TransportProtocolJSONRPC:
			return 3
		case v == ProtocolV03 && i.ProtocolBinding == a2a.TransportProtocolHTTPJSON:
			return 4
		}
		return -1
	}
	usable := slices.DeleteFunc(slices.Clone(ifaces), func(i *a2a.AgentInterface) bool {
		return i == nil || i.URL == "" || rank(i) < 0
	})
	if len(usable) == 0 {
		return nil, ""
	}
	slices.SortStableFunc(usable, func(a, b *a2a.AgentInterface) int { return rank(a) - rank(b) })
	return usable[0], normaliseVersion(string(usable[0].ProtocolVersion))
}

// normaliseVersion maps a card's protocol version to ProtocolV1 or
// ProtocolV03 by major version; "" for anything else. An interface without a
// version is taken as 1.0: supportedInterfaces only exist in 1.0 cards (the
// 0.3 parser fills the version in for 0.3 ones).
func normaliseVersion(v string) string {
	if v == "" {
		return ProtocolV1
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".")
	switch major {
	case "1":
		return ProtocolV1
	case "0":
		return ProtocolV03
	}
	return ""
}
