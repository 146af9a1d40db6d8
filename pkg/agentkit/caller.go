/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Callers are authenticated with the Kubernetes TokenReview API: the
// operator sends a token of its own ServiceAccount bound to the Agent's
// audience (spec.auth.serviceAccountToken), the kit asks the API server
// whether the token is valid for its audience, and the user name the API
// server answers is the caller. A claim on a Delegation is then proven
// only from the operator's identity (WithOperator).

// Caller is who made a request, as the API server authenticated them.
type Caller struct {
	// Username is the authenticated user, e.g.
	// system:serviceaccount:tether-system:tether-controller-manager.
	Username string
	// UID and Groups are the user's, as TokenReview reported them.
	UID    string
	Groups []string
}

// TokenReviewer creates TokenReviews: the AuthenticationV1().TokenReviews()
// of a client-go clientset. The agent's identity needs create on
// tokenreviews (authentication.k8s.io), which the system:auth-delegator
// ClusterRole grants.
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// WithTokenReview makes the Server authenticate every protocol request
// (the card stays public): the request's "Authorization: Bearer" token
// must pass TokenReview for audience, or the request is refused with HTTP
// 401 before its body is read. The caller is then CallerFrom(ctx) in the
// executor, and owns the tasks it created: no other caller can read,
// list, continue or cancel them.
func WithTokenReview(reviews TokenReviewer, audience string) Option {
	return func(k *Kit) { k.reviews, k.audience = reviews, audience }
}

// WithOperator names the operator's identity (its ServiceAccount's user
// name, see ServiceAccountUsername). A claim on a Delegation is then
// proven only for a message the operator sent: knowing a task id or a
// Delegation's name is not enough. Use it with WithTokenReview (or another
// authentication that sets a2asrv.CallContext.User), else no caller is
// authenticated and no claim is proven.
func WithOperator(username string) Option { return func(k *Kit) { k.operator = username } }

// ServiceAccountUsername is the user name Kubernetes authenticates a
// ServiceAccount's tokens as.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

type callerKey struct{}

// CallerFrom returns the authenticated caller of the request being served
// or the task being executed; false when the request was not authenticated.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// Attribute keys of the a2asrv.User the kit sets for an authenticated caller.
const (
	userAttrUID    = "uid"
	userAttrGroups = "groups"
)

// asUser is the caller as a2a-go's task store and executor see it.
func (c Caller) asUser() *a2asrv.User {
	return a2asrv.NewAuthenticatedUser(c.Username, map[string]any{userAttrUID: c.UID, userAttrGroups: c.Groups})
}

// callerOf reads an authenticated a2asrv.User back (a2a-go may have carried
// it through JSON, so groups may come back as []any).
func callerOf(u *a2asrv.User) (Caller, bool) {
	if u == nil || !u.Authenticated || u.Name == "" {
		return Caller{}, false
	}
	c := Caller{Username: u.Name}
	c.UID, _ = u.Attributes[userAttrUID].(string)
	switch gs := u.Attributes[userAttrGroups].(type) {
	case []string:
		c.Groups = gs
	case []any:
		for _, g := range gs {
			if s, ok := g.(string); ok {
				c.Groups = append(c.Groups, s)
			}
		}
	}
	return c, true
}

// reviewCacheTTL is how long a token's review is reused: a renewal every
// few seconds costs no API request, and a revoked token is refused soon.
const reviewCacheTTL = time.Minute

// maxCachedReviews bounds the cache: past it, it starts again empty.
const maxCachedReviews = 4096

type cachedReview struct {
	caller  Caller
	expires time.Time
}

// reviewCache keeps successful reviews by the token's hash (never the token).
type reviewCache struct {
	mu      sync.Mutex
	reviews map[[sha256.Size]byte]cachedReview
}

func (rc *reviewCache) get(key [sha256.Size]byte, now time.Time) (Caller, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, ok := rc.reviews[key]
	if !ok || !now.Before(r.expires) {
		return Caller{}, false
	}
	return r.caller, true
}

func (rc *reviewCache) put(key [sha256.Size]byte, r cachedReview) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.reviews == nil || len(rc.reviews) >= maxCachedReviews {
		rc.reviews = map[[sha256.Size]byte]cachedReview{}
	}
	rc.reviews[key] = r
}

// Authenticate wraps protocol handlers (NewServer does it with
// WithTokenReview): a request without a token that passes TokenReview for
// the kit's audience is refused; an authenticated one carries its Caller
// in the request context, which Interceptor makes the call's user. Without
// WithTokenReview every request is refused.
func (k *Kit) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k.reviews == nil {
			refuse(w, http.StatusInternalServerError, "", "the agent has no TokenReview configured (agentkit.WithTokenReview)")
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			refuse(w, http.StatusUnauthorized, "", "a bearer token is required (a Kubernetes ServiceAccount token for audience "+k.audience+")")
			return
		}
		c, status, err := k.review(r.Context(), token)
		if err != nil {
			refuse(w, status, "invalid_token", err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	})
}

// review asks the API server who the token is; the status is the HTTP
// answer to give when it is no one (401), or when it cannot tell (503).
func (k *Kit) review(ctx context.Context, token string) (Caller, int, error) {
	if k.audience == "" {
		// An empty audience would accept tokens meant for the API server.
		return Caller{}, http.StatusInternalServerError, fmt.Errorf("the agent names no audience to check tokens for (agentkit.WithTokenReview)")
	}
	key := sha256.Sum256([]byte(token))
	now := k.clock.Now()
	if c, ok := k.reviewed.get(key, now); ok {
		return c, 0, nil
	}
	tr, err := k.reviews.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{k.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		k.logger.Warn("TokenReview failed", "error", err)
		return Caller{}, http.StatusServiceUnavailable, fmt.Errorf("TokenReview failed; try again")
	}
	st := tr.Status
	switch {
	case !st.Authenticated:
		why := st.Error
		if why == "" {
			why = "the token is not valid"
		}
		return Caller{}, http.StatusUnauthorized, fmt.Errorf("the token was refused: %s", why)
	case !slices.Contains(st.Audiences, k.audience):
		return Caller{}, http.StatusUnauthorized, fmt.Errorf("the token is not bound to audience %q", k.audience)
	}
	c := Caller{Username: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	k.reviewed.put(key, cachedReview{caller: c, expires: now.Add(reviewCacheTTL)})
	return c, 0, nil
}

// refuse answers an unauthenticated request (RFC 6750): the challenge in
// WWW-Authenticate, the reason as text.
func refuse(w http.ResponseWriter, status int, code, reason string) {
	if status != http.StatusUnauthorized {
		http.Error(w, "the caller cannot be authenticated: "+reason, status)
		return
	}
	challenge := `Bearer realm="a2a"`
	if code != "" {
		challenge += `, error="` + code + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "unauthenticated: "+reason, status)
}
