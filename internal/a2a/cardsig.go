/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"
)

// Signed agent cards (A2A 1.0 §8.4). A card's `signatures` are JWS
// (RFC 7515) objects {protected, signature, header} whose payload is
// detached: the card's JSON without `signatures`, with empty values left
// out, canonicalised with RFC 8785 (JCS). The empty values left out are the
// ones the A2A SDKs (a2a-js, a2a-python) leave out: empty strings, nulls,
// and arrays and objects that are empty once their own empty values are
// gone; and an extension's `required: false`, a field without presence in
// A2A's proto that a2a-js's canonicalisation never writes. Canonicalisation
// is gowebpki/jcs; the JWS is go-jose.

// CardSignatureAlgorithms are the JWS algorithms a card may be signed with:
// asymmetric ones only (a shared secret would let every verifier sign).
var CardSignatureAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
}

// MaxKeyIDLength bounds a signature's key id (it is shown in status).
const MaxKeyIDLength = 256

// MaxCardSignatures bounds the signatures of a card that are tried.
const MaxCardSignatures = 8

// ErrCardSignature matches (errors.Is) every reason a card's signature
// does not hold: none when one is required, a bad signature, a key not in
// the set.
var ErrCardSignature = errors.New("agent card signature")

// CardSignature is what the card's signatures proved.
type CardSignature struct {
	// Signed is true when the card carries at least one signature.
	Signed bool
	// Verified is true when one signature verified with a key of the set.
	Verified bool
	// KeyID and Algorithm are those of the signature that verified or,
	// when none did, of the first one (as the card claims them).
	KeyID, Algorithm string
	// Err says why no signature verified (nil when one did, or when the
	// card is unsigned).
	Err error
}

// cardSignatureWire is one entry of a card's `signatures`.
type cardSignatureWire struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// CardPayload is what a signature of the card covers: the card's JSON
// without `signatures`, empty values left out, in RFC 8785 canonical form.
func CardPayload(cardJSON []byte) ([]byte, error) {
	card, err := decodeCardObject(cardJSON)
	if err != nil {
		return nil, err
	}
	delete(card, "signatures")
	withoutUnsetRequired(card)
	return canonical(card)
}

// withoutUnsetRequired leaves out the `required: false` of the card's
// extensions: false is the proto default of a field without presence.
func withoutUnsetRequired(card map[string]any) {
	caps, _ := card["capabilities"].(map[string]any)
	exts, _ := caps["extensions"].([]any)
	for _, e := range exts {
		if ext, ok := e.(map[string]any); ok && ext["required"] == false {
			delete(ext, "required")
		}
	}
}

// SignCard adds a signature by key (a private JWK with a key id) to the
// card's signatures and returns the card's JSON.
func SignCard(cardJSON []byte, key *jose.JSONWebKey) ([]byte, error) {
	if key == nil || key.KeyID == "" || key.IsPublic() {
		return nil, errors.New("a card is signed with a private JSON Web Key that has a key id (kid)")
	}
	alg := jose.SignatureAlgorithm(key.Algorithm)
	if alg == "" {
		return nil, fmt.Errorf("the signing key %q names no algorithm (alg)", key.KeyID)
	}
	if !slices.Contains(CardSignatureAlgorithms, alg) {
		return nil, fmt.Errorf("the signing key %q uses %s; cards are signed with one of %v", key.KeyID, alg, CardSignatureAlgorithms)
	}
	payload, err := CardPayload(cardJSON)
	if err != nil {
		return nil, err
	}
	// A JWK signing key puts its kid in the protected header.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JOSE"))
	if err != nil {
		return nil, fmt.Errorf("the signing key %q: %w", key.KeyID, err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return nil, fmt.Errorf("signing the card with key %q: %w", key.KeyID, err)
	}
	compact, err := jws.DetachedCompactSerialize()
	if err != nil {
		return nil, err
	}
	protected, _, sig := splitCompact(compact)
	card, err := decodeCardObject(cardJSON)
	if err != nil {
		return nil, err
	}
	var sigs []any
	if old, ok := card["signatures"].([]any); ok {
		sigs = old
	}
	card["signatures"] = append(sigs, map[string]any{"protected": protected, "signature": sig})
	return json.Marshal(card)
}

// VerifyCard checks the card's signatures against keys (nil: none known).
// One signature that verifies with a key of the set is enough; a key is
// found by its key id, and a key that names an algorithm is only used with it.
func VerifyCard(cardJSON []byte, keys *jose.JSONWebKeySet) CardSignature {
	var wire struct {
		Signatures []cardSignatureWire `json:"signatures"`
	}
	if err := json.Unmarshal(cardJSON, &wire); err != nil {
		return CardSignature{Signed: bytes.Contains(cardJSON, []byte(`"signatures"`)),
			Err: fmt.Errorf("%w: the card's signatures cannot be read: %v", ErrCardSignature, err)}
	}
	if len(wire.Signatures) == 0 {
		return CardSignature{}
	}
	payload, err := CardPayload(cardJSON)
	if err != nil {
		return CardSignature{Signed: true, Err: fmt.Errorf("%w: %v", ErrCardSignature, err)}
	}
	out := CardSignature{Signed: true}
	var errs []string
	for i, s := range wire.Signatures {
		if i == MaxCardSignatures {
			errs = append(errs, fmt.Sprintf("%d more signatures not tried", len(wire.Signatures)-i))
			break
		}
		kid, alg, err := verifyOne(s, payload, keys)
		if i == 0 || err == nil {
			out.KeyID, out.Algorithm = kid, alg
		}
		if err == nil {
			out.Verified = true
			return out
		}
		errs = append(errs, err.Error())
	}
	out.Err = fmt.Errorf("%w: no signature verified: %s", ErrCardSignature, strings.Join(errs, "; "))
	return out
}

// verifyOne verifies one signature; it returns the key id and algorithm
// the signature's protected header names.
func verifyOne(s cardSignatureWire, payload []byte, keys *jose.JSONWebKeySet) (kid, alg string, err error) {
	if s.Protected == "" || s.Signature == "" {
		return "", "", errors.New("a signature without protected header or signature value")
	}
	jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, payload, CardSignatureAlgorithms)
	if err != nil {
		return "", "", fmt.Errorf("a signature that cannot be read: %v", err)
	}
	h := jws.Signatures[0].Protected
	kid, alg = h.KeyID, h.Algorithm
	if kid == "" {
		return kid, alg, errors.New("a signature whose protected header has no key id (kid)")
	}
	if len(kid) > MaxKeyIDLength {
		return "", alg, fmt.Errorf("a signature whose key id is longer than %d bytes", MaxKeyIDLength)
	}
	if keys == nil {
		return kid, alg, fmt.Errorf("key %q: no key set to verify it with", kid)
	}
	candidates := keys.Key(kid)
	if len(candidates) == 0 {
		return kid, alg, fmt.Errorf("key %q is not in the key set", kid)
	}
	for _, k := range candidates {
		if !k.IsPublic() {
			k = k.Public()
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if jws.DetachedVerify(payload, &k) == nil {
			return kid, alg, nil
		}
	}
	return kid, alg, fmt.Errorf("the signature by key %q (%s) does not match the card", kid, alg)
}

// ParseKeySet reads a JSON Web Key Set; only the public part of its keys is kept.
func ParseKeySet(data []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("not a JSON Web Key Set ({\"keys\": [...]})")
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("the JSON Web Key Set holds no keys")
	}
	for i, k := range set.Keys {
		if k.KeyID == "" {
			return nil, fmt.Errorf("key %d of the JSON Web Key Set has no key id (kid)", i)
		}
		if !k.IsPublic() {
			set.Keys[i] = k.Public()
		}
	}
	return &set, nil
}

// decodeCardObject reads a card's JSON as a generic object, numbers kept
// as they were written.
func decodeCardObject(cardJSON []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(cardJSON))
	dec.UseNumber()
	var card map[string]any
	if err := dec.Decode(&card); err != nil {
		return nil, fmt.Errorf("the card is not a JSON object: %v", err)
	}
	if card == nil {
		return nil, errors.New("the card is not a JSON object")
	}
	return card, nil
}

// canonical is the RFC 8785 form of v with its empty values left out.
func canonical(v map[string]any) ([]byte, error) {
	cleaned, _ := withoutEmpty(v)
	if cleaned == nil {
		cleaned = map[string]any{}
	}
	b, err := json.Marshal(cleaned)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// withoutEmpty leaves out empty strings, nulls, and arrays and objects that
// are empty once their own empty values are gone; false and 0 are kept.
func withoutEmpty(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		return x, x != ""
	case []any:
		var out []any
		for _, e := range x {
			if c, ok := withoutEmpty(e); ok {
				out = append(out, c)
			}
		}
		return out, len(out) > 0
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if c, ok := withoutEmpty(e); ok {
				out[k] = c
			}
		}
		return out, len(out) > 0
	}
	return v, true
}

// splitCompact splits a JWS compact serialization into its three parts.
func splitCompact(s string) (protected, payload, signature string) {
	protected, rest, _ := strings.Cut(s, ".")
	payload, signature, _ = strings.Cut(rest, ".")
	return protected, payload, signature
}
