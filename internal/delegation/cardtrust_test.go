/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

func TestTrustCard(t *testing.T) {
	required := &v1alpha1.AgentCardSignature{Required: true}
	optional := &v1alpha1.AgentCardSignature{}
	verified := a2a.CardSignature{Signed: true, Verified: true, KeyID: "kit-1", Algorithm: "ES256"}
	badSig := a2a.CardSignature{Signed: true, KeyID: "kit-1", Algorithm: "ES256",
		Err: fmt.Errorf("%w: no signature verified: the signature by key \"kit-1\" (ES256) does not match the card", a2a.ErrCardSignature)}
	unknownKey := a2a.CardSignature{Signed: true, KeyID: "kit-9", Algorithm: "ES256",
		Err: fmt.Errorf("%w: no signature verified: key \"kit-9\" is not in the key set", a2a.ErrCardSignature)}
	unsigned := a2a.CardSignature{}
	for _, tc := range []struct {
		name    string
		check   *v1alpha1.AgentCardSignature
		sig     a2a.CardSignature
		use     bool
		message string
		signed  bool
	}{
		{"nothing asked, unsigned", nil, unsigned, true, "", false},
		{"nothing asked, signed", nil, badSig, true, "not checked", false},
		{"required, verified", required, verified, true, `card signed by key "kit-1" (ES256)`, true},
		{"optional, verified", optional, verified, true, `card signed by key "kit-1" (ES256)`, true},
		{"required, unsigned", required, unsigned, false, "not signed and spec.cardSignature.required is set", false},
		{"optional, unsigned", optional, unsigned, true, "card not signed (not required)", false},
		{"required, bad signature", required, badSig, false, "does not match the card", false},
		{"optional, bad signature", optional, badSig, false, "does not match the card", false},
		{"required, key not in the set", required, unknownKey, false, `key "kit-9" is not in the key set`, false},
		{"optional, key not in the set", optional, unknownKey, false, "not in the key set", false},
		{"signed, no reason given", required, a2a.CardSignature{Signed: true}, false, "does not verify", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := TrustCard(tc.check, tc.sig)
			g.Expect(got.Use).To(Equal(tc.use))
			g.Expect(got.Message).To(ContainSubstring(tc.message))
			if tc.message == "" {
				g.Expect(got.Message).To(BeEmpty())
			}
			if tc.signed {
				g.Expect(got.Signed).To(Equal(&v1alpha1.AgentCardSignatureStatus{KeyID: tc.sig.KeyID, Algorithm: tc.sig.Algorithm}))
			} else {
				g.Expect(got.Signed).To(BeNil())
			}
		})
	}
	g := NewWithT(t)
	g.Expect(errors.Is(badSig.Err, a2a.ErrCardSignature)).To(BeTrue())
}
