/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"

	"github.com/go-jose/go-jose/v4"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Signed cards (A2A 1.0 §8.4). With WithCardSigningKey the Server signs
// the card it serves: a JWS (ES256, EdDSA, RS256, ...) over the RFC 8785
// form of the card's JSON without its signatures, as the operator checks it
// under an Agent's spec.cardSignature. The key is a private JSON Web Key
// with a key id (kid) and an algorithm (alg), usually a Secret's key
// mounted as a file (LoadCardSigningKey); the matching public key goes into
// the JSON Web Key Set the Agent names.

// WithCardSigningKey signs the served card with key (a private JWK with kid and alg).
func WithCardSigningKey(key *jose.JSONWebKey) Option { return func(k *Kit) { k.cardKey = key } }

// LoadCardSigningKey reads a private JSON Web Key from a file, for example
// a key of a Secret mounted into the agent's pod.
func LoadCardSigningKey(path string) (*jose.JSONWebKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var key jose.JSONWebKey
	if err := json.Unmarshal(b, &key); err != nil {
		return nil, fmt.Errorf("the card signing key %s is not a JSON Web Key", path)
	}
	if key.IsPublic() || key.KeyID == "" || key.Algorithm == "" {
		return nil, fmt.Errorf("the card signing key %s must be a private JSON Web Key with kid and alg", path)
	}
	return &key, nil
}

// PublicKeySet is the JSON Web Key Set an Agent's spec.cardSignature.keys
// names for cards signed with these keys (their public parts only).
func PublicKeySet(keys ...*jose.JSONWebKey) ([]byte, error) {
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		pub := k.Public()
		pub.Use = "sig"
		set.Keys = append(set.Keys, pub)
	}
	return json.Marshal(set)
}

// signCards wraps the card handler: the card it writes is signed with key.
// The card depends on the request (interfaces derived from its Host), so
// the last card signed is kept and signed again only when it changes.
func signCards(h http.Handler, key *jose.JSONWebKey) http.Handler {
	var (
		mu           sync.Mutex
		last, signed []byte
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code != http.StatusOK || r.Method == http.MethodHead {
			copyHeader(w.Header(), rec.Header())
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
			return
		}
		mu.Lock()
		out := signed
		if !bytes.Equal(body, last) {
			var err error
			if out, err = tethera2a.SignCard(body, key); err != nil {
				mu.Unlock()
				// Never serve an unsigned card in place of a signed one.
				http.Error(w, "the agent card cannot be signed", http.StatusInternalServerError)
				return
			}
			last, signed = bytes.Clone(body), out
		}
		mu.Unlock()
		copyHeader(w.Header(), rec.Header())
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	})
}

func copyHeader(dst, src http.Header) { maps.Copy(dst, src) }
