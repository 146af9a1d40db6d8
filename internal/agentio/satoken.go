/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
)

// ServiceAccountTokens hands out tokens of the operator's own
// ServiceAccount bound to an audience (the TokenRequest API), one per
// audience and lifetime, renewed once 80% of the lifetime has passed: a
// call costs no API request while its token is fresh. The operator's RBAC
// allows create on serviceaccounts/token for this ServiceAccount only.
type ServiceAccountTokens struct {
	// ServiceAccounts creates the tokens (CoreV1().ServiceAccounts of a clientset).
	ServiceAccounts corev1client.ServiceAccountsGetter
	// Namespace and Name are the operator's own ServiceAccount.
	Namespace, Name string
	// Clock is the wall clock; tests move a fake one.
	Clock clock.PassiveClock

	requests singleflight.Group
	mu       sync.Mutex
	tokens   map[tokenKey]issuedToken
}

type tokenKey struct {
	audience string
	seconds  int64
}

type issuedToken struct {
	token     string
	renewAt   time.Time
	expiresAt time.Time
}

// renewAfter is the share of a token's lifetime after which it is renewed.
const renewAfter = 0.8

// DefaultTokenExpirationSeconds is the lifetime asked for when an Agent
// names none (the CRD's default).
const DefaultTokenExpirationSeconds int64 = 3600

// Username is the ServiceAccount's user name as TokenReview reports it,
// system:serviceaccount:<namespace>:<name>.
func (s *ServiceAccountTokens) Username() string {
	return "system:serviceaccount:" + s.Namespace + ":" + s.Name
}

// Token returns a token bound to audience with the given lifetime.
func (s *ServiceAccountTokens) Token(ctx context.Context, audience string, expirationSeconds int64) (string, error) {
	if s == nil || s.ServiceAccounts == nil || s.Namespace == "" || s.Name == "" {
		return "", errors.New("the operator does not know its own ServiceAccount " +
			"(--service-account-namespace and --service-account-name, set by the chart)")
	}
	if expirationSeconds == 0 {
		expirationSeconds = DefaultTokenExpirationSeconds
	}
	key := tokenKey{audience: audience, seconds: expirationSeconds}
	if t, ok := s.cached(key); ok {
		return t, nil
	}
	v, err, _ := s.requests.Do(key.audience+"\x00"+strconv.FormatInt(key.seconds, 10), func() (any, error) {
		if t, ok := s.cached(key); ok { // renewed while we waited
			return t, nil
		}
		return s.request(context.WithoutCancel(ctx), key)
	})
	if err != nil {
		// Renewal starts well before expiry: until then, the token in hand
		// still serves while the API server cannot give a new one.
		if t, ok := s.unexpired(key); ok {
			return t, nil
		}
		return "", err
	}
	return v.(string), nil
}

func (s *ServiceAccountTokens) unexpired(key tokenKey) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[key]
	if !ok || !s.now().Before(t.expiresAt) {
		return "", false
	}
	return t.token, true
}

func (s *ServiceAccountTokens) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

func (s *ServiceAccountTokens) cached(key tokenKey) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[key]
	if !ok || !s.now().Before(t.renewAt) {
		return "", false
	}
	return t.token, true
}

// request asks the API server for a token. The call is detached from the
// caller's cancel (others may wait on it) but bounded on its own.
func (s *ServiceAccountTokens) request(ctx context.Context, key tokenKey) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seconds := key.seconds
	issued := s.now()
	tr, err := s.ServiceAccounts.ServiceAccounts(s.Namespace).CreateToken(ctx, s.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{key.audience}, ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s/%s for audience %q: %w", s.Namespace, s.Name, key.audience, err)
	}
	// The lifetime granted may be shorter than asked (the API server caps
	// it); it is read against the wall clock the server's answer is in.
	lifetime := time.Duration(seconds) * time.Second
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left > 0 && left < lifetime {
		lifetime = left
	}
	t := issuedToken{token: tr.Status.Token, expiresAt: issued.Add(lifetime),
		renewAt: issued.Add(time.Duration(float64(lifetime) * renewAfter))}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[tokenKey]issuedToken{}
	}
	for k, old := range s.tokens { // drop what expired; there are few audiences
		if !s.now().Before(old.expiresAt) {
			delete(s.tokens, k)
		}
	}
	s.tokens[key] = t
	return t.token, nil
}
