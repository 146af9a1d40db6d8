/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// CardTrust is what a card read's signature allows.
type CardTrust struct {
	// Use is true when the card may be used.
	Use bool
	// Message says why not, or which key signed it ("" when nothing is
	// checked and the card is unsigned).
	Message string
	// Signed is the signature to show in status (nil unless one verified
	// under spec.cardSignature).
	Signed *v1alpha1.AgentCardSignatureStatus
}

// TrustCard decides whether a card may be used, from the Agent's
// spec.cardSignature and what the card's signatures proved: without
// spec.cardSignature nothing is checked; with it, a signed card must verify
// with a key of the set, and an unsigned one is refused when required.
func TrustCard(check *v1alpha1.AgentCardSignature, sig a2a.CardSignature) CardTrust {
	if check == nil {
		if sig.Signed {
			return CardTrust{Use: true, Message: "card signature not checked (no spec.cardSignature)"}
		}
		return CardTrust{Use: true}
	}
	switch {
	case sig.Verified:
		return CardTrust{Use: true, Message: fmt.Sprintf("card signed by key %q (%s)", sig.KeyID, sig.Algorithm),
			Signed: &v1alpha1.AgentCardSignatureStatus{KeyID: sig.KeyID, Algorithm: sig.Algorithm}}
	case sig.Signed:
		msg := "the card's signature does not verify"
		if sig.Err != nil {
			msg = sig.Err.Error()
		}
		return CardTrust{Message: msg}
	case check.Required:
		return CardTrust{Message: "the card is not signed and spec.cardSignature.required is set"}
	}
	return CardTrust{Use: true, Message: "card not signed (not required)"}
}
