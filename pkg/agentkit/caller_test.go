/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/delegation"
)

// These pin the HTTP answers and the claim's step 0; the operator's tests
// run TokenReview on a real API server.

const operatorUser = "system:serviceaccount:tether-system:tether"

// stubReviews authenticates "good" for the audience "agent", "other-aud"
// for another audience, and fails on "broken".
type stubReviews struct{ calls atomic.Int32 }

func (s *stubReviews) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	s.calls.Add(1)
	out := tr.DeepCopy()
	switch tr.Spec.Token {
	case "good":
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: tr.Spec.Audiences,
			User: authenticationv1.UserInfo{Username: operatorUser, UID: "u-1", Groups: []string{"system:serviceaccounts"}}}
	case "other-aud":
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"elsewhere"},
			User: authenticationv1.UserInfo{Username: operatorUser}}
	case "broken":
		return nil, errors.New("connection refused")
	default:
		out.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return out, nil
}

func TestAuthenticateAnswersWhoTheCallerIs(t *testing.T) {
	g := NewWithT(t)
	reviews := &stubReviews{}
	k := New(WithTokenReview(reviews, "agent"))
	h := k.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := CallerFrom(r.Context())
		g.Expect(ok).To(BeTrue())
		_, _ = w.Write([]byte(c.Username))
	}))
	call := func(auth string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for auth, want := range map[string]int{
		"":                 http.StatusUnauthorized,
		"Basic Zm9vOmJhcg": http.StatusUnauthorized,
		"Bearer nope":      http.StatusUnauthorized,
		"Bearer other-aud": http.StatusUnauthorized,
		"Bearer broken":    http.StatusServiceUnavailable,
	} {
		w := call(auth)
		g.Expect(w.Code).To(Equal(want), auth)
		if want == http.StatusUnauthorized {
			g.Expect(w.Header().Get("WWW-Authenticate")).To(HavePrefix("Bearer"), auth)
		}
	}
	g.Expect(call("Bearer other-aud").Body.String()).To(ContainSubstring(`not bound to audience "agent"`))

	before := reviews.calls.Load()
	for range 3 {
		w := call("bearer good")
		g.Expect(w.Code).To(Equal(http.StatusOK))
		g.Expect(w.Body.String()).To(Equal(operatorUser))
	}
	g.Expect(reviews.calls.Load()).To(Equal(before+1), "one review, then the cached answer")
}

func TestAnEmptyAudienceAcceptsNoToken(t *testing.T) {
	g := NewWithT(t)
	reviews := &stubReviews{}
	h := New(WithTokenReview(reviews, "")).Authenticate(http.NotFoundHandler())
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer good")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	g.Expect(w.Code).To(Equal(http.StatusInternalServerError))
	g.Expect(reviews.calls.Load()).To(BeZero(), "an empty audience would be the API server's own")
}

// With WithOperator, a claim from anyone but the operator is refused before
// the Delegation is read, however right its ids are.
func TestClaimsCountOnlyFromTheOperator(t *testing.T) {
	g := NewWithT(t)
	c := fakeClient(t)
	req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"}
	kit := New(WithOrigins(orchOrigin), WithOperator(operatorUser))
	orch := claim{key: types.NamespacedName{Namespace: ns, Name: "orch"}, firstMessageID: delegation.MessageID(orchUID, -1),
		taskID: "orch-task", kit: kit}
	for caller, want := range map[string]string{
		"":                                    "came from an unauthenticated caller",
		"system:serviceaccount:team:intruder": "came from system:serviceaccount:team:intruder",
	} {
		cl := orch
		cl.caller = caller
		_, err := DelegateAsync(withDelegation(context.Background(), cl), c, req)
		g.Expect(err).To(MatchError(ErrClaimNotProven))
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	cl := orch
	cl.caller = operatorUser
	_, err := DelegateAsync(withDelegation(context.Background(), cl), c, req)
	g.Expect(err).NotTo(HaveOccurred(), "the operator's claim is proven")
}
