/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"
)

// testSigningKey is a fresh private P-256 JWK with key id kid.
func testSigningKey(t *testing.T, kid string) *jose.JSONWebKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}
}

func publicSet(keys ...*jose.JSONWebKey) *jose.JSONWebKeySet {
	set := &jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.Public())
	}
	return set
}

const testCard = `{"name":"signed","description":"a signed card","version":"1",
  "supportedInterfaces":[{"url":"http://127.0.0.1:1/","protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":""}],
  "capabilities":{"streaming":false,"extensions":[]},"skills":[{"id":"echo","name":"Echo","tags":[]}],
  "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"iconUrl":"","score":1.50}`

// The worked example of A2A 1.0 §8.4.1: empty values are left out, false
// is kept, and keys are ordered as RFC 8785 orders them.
func TestCardPayloadIsTheSpecsWorkedExample(t *testing.T) {
	g := NewWithT(t)
	got, err := CardPayload([]byte(`{
  "name": "Example Agent",
  "description": "",
  "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
  "skills": [],
  "signatures": [{"protected": "x", "signature": "y"}]
}`))
	g.Expect(err).NotTo(HaveOccurred())
	// The spec keeps the REQUIRED description and skills even when empty;
	// the SDKs (a2a-js, a2a-python) leave every empty value out, and a card
	// signed by them verifies only under their rule, which is ours.
	g.Expect(string(got)).To(Equal(`{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}`))
}

// The signature of the spec's sample card (§8.5) names ES256 and key-1;
// without that key it cannot verify, and says so.
func TestTheSpecsSampleSignatureNamesItsKey(t *testing.T) {
	g := NewWithT(t)
	card := `{"name":"GeoSpatial Route Planner Agent","signatures":[{
  "protected":"eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0",
  "signature":"QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"}]}`
	sig := VerifyCard([]byte(card), publicSet(testSigningKey(t, "other")))
	g.Expect(sig.Signed).To(BeTrue())
	g.Expect(sig.Verified).To(BeFalse())
	g.Expect(sig.KeyID).To(Equal("key-1"))
	g.Expect(sig.Algorithm).To(Equal("ES256"))
	g.Expect(errors.Is(sig.Err, ErrCardSignature)).To(BeTrue())
	g.Expect(sig.Err.Error()).To(ContainSubstring(`key "key-1" is not in the key set`))
}

func TestASignedCardVerifies(t *testing.T) {
	g := NewWithT(t)
	key := testSigningKey(t, "kit-1")
	signed, err := SignCard([]byte(testCard), key)
	g.Expect(err).NotTo(HaveOccurred())

	sig := VerifyCard(signed, publicSet(testSigningKey(t, "unrelated"), key))
	g.Expect(sig.Err).NotTo(HaveOccurred())
	g.Expect(sig).To(Equal(CardSignature{Signed: true, Verified: true, KeyID: "kit-1", Algorithm: "ES256"}))

	// The protected header is what §8.4.2 asks for.
	var card struct{ Signatures []cardSignatureWire }
	g.Expect(json.Unmarshal(signed, &card)).To(Succeed())
	g.Expect(card.Signatures).To(HaveLen(1))
	h, err := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(h)).To(And(ContainSubstring(`"alg":"ES256"`), ContainSubstring(`"kid":"kit-1"`), ContainSubstring(`"typ":"JOSE"`)))

	// Whitespace, key order and empty values are not part of what is signed.
	var generic map[string]any
	g.Expect(json.Unmarshal(signed, &generic)).To(Succeed())
	generic["documentationUrl"] = ""
	reordered, err := json.MarshalIndent(generic, "", "   ")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(VerifyCard(reordered, publicSet(key)).Verified).To(BeTrue())
}

func TestAChangedCardDoesNotVerify(t *testing.T) {
	key := testSigningKey(t, "kit-1")
	signed, err := SignCard([]byte(testCard), key)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for name, change := range map[string]func(map[string]any){
		"a name":          func(c map[string]any) { c["name"] = "signet" },
		"an interface":    func(c map[string]any) { c["supportedInterfaces"].([]any)[0].(map[string]any)["url"] = "http://evil/" },
		"a new field":     func(c map[string]any) { c["url"] = "http://evil/" },
		"a false to true": func(c map[string]any) { c["capabilities"].(map[string]any)["streaming"] = true },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var c map[string]any
			g.Expect(json.Unmarshal(signed, &c)).To(Succeed())
			change(c)
			b, err := json.Marshal(c)
			g.Expect(err).NotTo(HaveOccurred())
			sig := VerifyCard(b, publicSet(key))
			g.Expect(sig.Signed).To(BeTrue())
			g.Expect(sig.Verified).To(BeFalse())
			g.Expect(sig.KeyID).To(Equal("kit-1"))
			g.Expect(sig.Err.Error()).To(ContainSubstring(`the signature by key "kit-1" (ES256) does not match the card`))
		})
	}
	t.Run("one byte of the card", func(t *testing.T) {
		g := NewWithT(t)
		i := indexOf(signed, []byte(`"signed"`)) + 1
		b := append([]byte(nil), signed...)
		b[i] = 'S' // "Signed"
		g.Expect(VerifyCard(b, publicSet(key)).Verified).To(BeFalse())
	})
}

func indexOf(b, sub []byte) int {
	for i := range b {
		if len(b)-i >= len(sub) && string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

func TestVerifyCardRefuses(t *testing.T) {
	key := testSigningKey(t, "kit-1")
	signed, err := SignCard([]byte(testCard), key)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	sameKidOtherKey := testSigningKey(t, "kit-1")
	rs := *key.Public().Key.(*ecdsa.PublicKey)
	wrongAlg := jose.JSONWebKey{Key: &rs, KeyID: "kit-1", Algorithm: string(jose.ES384)}
	encKey := jose.JSONWebKey{Key: &rs, KeyID: "kit-1", Use: "enc"}
	for name, tc := range map[string]struct {
		card []byte
		keys *jose.JSONWebKeySet
		want string
	}{
		"a key not in the set":      {signed, publicSet(testSigningKey(t, "kit-2")), `key "kit-1" is not in the key set`},
		"no key set":                {signed, nil, "no key set"},
		"another key with that kid": {signed, publicSet(sameKidOtherKey), "does not match"},
		"a key for another alg":     {signed, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{wrongAlg}}, "does not match"},
		"a key for encryption":      {signed, &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{encKey}}, "does not match"},
		"an HMAC signature": {[]byte(`{"name":"x","signatures":[{"protected":"eyJhbGciOiJIUzI1NiIsImtpZCI6ImtpdC0xIn0","signature":"AAAA"}]}`),
			publicSet(key), "cannot be read"},
		"a signature without kid": {[]byte(`{"name":"x","signatures":[{"protected":"eyJhbGciOiJFUzI1NiJ9","signature":"AAAA"}]}`),
			publicSet(key), "no key id"},
		"an empty signature": {[]byte(`{"name":"x","signatures":[{}]}`), publicSet(key), "without protected header"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			sig := VerifyCard(tc.card, tc.keys)
			g.Expect(sig.Signed).To(BeTrue())
			g.Expect(sig.Verified).To(BeFalse())
			g.Expect(errors.Is(sig.Err, ErrCardSignature)).To(BeTrue())
			g.Expect(sig.Err.Error()).To(ContainSubstring(tc.want))
		})
	}
	t.Run("an unsigned card", func(t *testing.T) {
		NewWithT(t).Expect(VerifyCard([]byte(testCard), publicSet(key))).To(Equal(CardSignature{}))
	})
}

// Key rotation: a card signed by the old and the new key verifies with either set.
func TestACardSignedTwiceVerifiesWithEitherKey(t *testing.T) {
	g := NewWithT(t)
	old, next := testSigningKey(t, "old"), testSigningKey(t, "new")
	once, err := SignCard([]byte(testCard), old)
	g.Expect(err).NotTo(HaveOccurred())
	twice, err := SignCard(once, next)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(VerifyCard(twice, publicSet(old)).KeyID).To(Equal("old"))
	sig := VerifyCard(twice, publicSet(next))
	g.Expect(sig.Verified).To(BeTrue())
	g.Expect(sig.KeyID).To(Equal("new"))
}

func TestSignCardRefusesKeys(t *testing.T) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for name, key := range map[string]*jose.JSONWebKey{
		"a public key": ptr(testSigningKey(t, "k").Public()),
		"no kid":       {Key: edPriv, Algorithm: string(jose.EdDSA)},
		"no alg":       {Key: edPriv, KeyID: "k"},
		"an HMAC key":  {Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k", Algorithm: string(jose.HS256)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := SignCard([]byte(testCard), key)
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
	t.Run("an Ed25519 key signs", func(t *testing.T) {
		g := NewWithT(t)
		key := &jose.JSONWebKey{Key: edPriv, KeyID: "ed", Algorithm: string(jose.EdDSA)}
		signed, err := SignCard([]byte(testCard), key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(VerifyCard(signed, publicSet(key)).Verified).To(BeTrue())
	})
}

func ptr[T any](v T) *T { return &v }

func TestParseKeySet(t *testing.T) {
	g := NewWithT(t)
	key := testSigningKey(t, "kit-1")
	// A set holding a private key keeps only its public part.
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{*key}})
	g.Expect(err).NotTo(HaveOccurred())
	set, err := ParseKeySet(b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Keys[0].IsPublic()).To(BeTrue())
	for _, bad := range []string{`[]`, `{"keys":[]}`, `{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`, `not json`} {
		_, err := ParseKeySet([]byte(bad))
		g.Expect(err).To(HaveOccurred(), bad)
	}
}
