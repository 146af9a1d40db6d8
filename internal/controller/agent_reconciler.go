/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
)

// Agent condition reasons.
const (
	ReasonCardRead        = "CardRead"
	ReasonCardUnavailable = "CardUnavailable"
	// ReasonOriginNotAllowed: the card's interface is outside the Agent's
	// url, cardURL and allowedOrigins.
	ReasonOriginNotAllowed = a2a.ReasonOriginNotAllowed
	// ReasonSecretNotMarked: a Secret the Agent names lacks the
	// AgentCredentialsLabel its namespace's owner sets to consent.
	ReasonSecretNotMarked = "SecretNotMarked"
	// ReasonCardSignatureInvalid: spec.cardSignature refuses the card: it
	// is unsigned when a signature is required, its signature does not
	// verify, or its key is not in the set.
	ReasonCardSignatureInvalid = "CardSignatureInvalid"
	// ReasonCardKeysUnavailable: the key set spec.cardSignature names
	// cannot be read or is not a JSON Web Key Set.
	ReasonCardKeysUnavailable = "CardKeysUnavailable"
)

// AgentCredentialsLabel marks a Secret Agents of its namespace may use.
const AgentCredentialsLabel = agentio.AgentCredentialsLabel

// ErrSecretNotMarked matches (errors.Is) a Secret without the consent label.
var ErrSecretNotMarked = agentio.ErrSecretNotMarked

// AgentReconciler reads each Agent's card into its status. The read itself
// is an operation of the agent I/O layer, made on the Agent's own pool: a
// reconcile asks for it and returns, and the answer wakes the Agent again,
// so an agent whose card server never answers holds no worker.
type AgentReconciler struct {
	client.Client
	Connector *agentio.Connector
	// Calls runs the card reads on the Agents' pools (the Delegation
	// controller's, when both share it); nil builds one.
	Calls    *agentio.Dispatcher
	Recorder events.EventRecorder
	// MaxConcurrentReconciles is the number of workers (default 4).
	MaxConcurrentReconciles int
	// MaxCallTimeout caps a card read, whatever the Agent's requestTimeout.
	MaxCallTimeout time.Duration
}
