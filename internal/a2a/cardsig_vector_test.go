/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"
)

// cardSignatureVector is testdata/cardsig/vector.json, which the
// TypeScript agentkit's tests read too (sdk/typescript/test/cardsign.test.ts):
// a card with empty values, numbers, escapes and keys RFC 8785 orders by
// UTF-16 code units, its canonical payload, an Ed25519 key (its signatures
// are deterministic) and the card signed with it.
type cardSignatureVector struct {
	Card       json.RawMessage    `json:"card"`
	Payload    string             `json:"payload"`
	PrivateKey jose.JSONWebKey    `json:"privateKey"`
	KeySet     jose.JSONWebKeySet `json:"keySet"`
	SignedCard json.RawMessage    `json:"signedCard"`
}

// Both kits write the vector's signature byte for byte from its key, and
// read each other's: the signature in the file is the one either kit
// checks the other's against.
func TestCardSignatureVector(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile("testdata/cardsig/vector.json")
	g.Expect(err).NotTo(HaveOccurred())
	var v cardSignatureVector
	g.Expect(json.Unmarshal(b, &v)).To(Succeed())

	payload, err := CardPayload(v.Card)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(payload)).To(Equal(v.Payload))

	signed, err := SignCard(v.Card, &v.PrivateKey)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signaturesOf(t, signed)).To(Equal(signaturesOf(t, v.SignedCard)))

	// An extension's required: false is left out (as a2a-js leaves it
	// out), required: true is kept.
	g.Expect(v.Payload).NotTo(ContainSubstring(`"required"`))
	payload, err = CardPayload([]byte(`{"capabilities":{"extensions":[{"uri":"u","required":true}]}}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(payload)).To(Equal(`{"capabilities":{"extensions":[{"required":true,"uri":"u"}]}}`))

	g.Expect(VerifyCard(v.SignedCard, &v.KeySet)).To(Equal(CardSignature{Signed: true, Verified: true, KeyID: "vector-ed25519", Algorithm: "EdDSA"}))
}

func signaturesOf(t *testing.T, card []byte) []cardSignatureWire {
	t.Helper()
	var c struct {
		Signatures []cardSignatureWire `json:"signatures"`
	}
	NewWithT(t).Expect(json.Unmarshal(card, &c)).To(Succeed())
	return c.Signatures
}
