/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/pkg/agentkit"
)

func newCardKey(t *testing.T, kid string) *jose.JSONWebKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256)}
}

// cardKeysConfigMap stores the public key set of keys as ConfigMap name, key "jwks.json".
func cardKeysConfigMap(t *testing.T, g *WithT, ns, name string, keys ...*jose.JSONWebKey) {
	t.Helper()
	set, err := agentkit.PublicKeySet(keys...)
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"jwks.json": string(set)}}
	g.Expect(k8sClient.Create(context.Background(), cm)).To(Succeed())
}

func checkCardWith(configMap string, required bool) func(*v1alpha1.Agent) {
	return func(a *v1alpha1.Agent) {
		a.Spec.CardSignature = &v1alpha1.AgentCardSignature{Required: required,
			Keys: v1alpha1.CardKeys{ConfigMapKeyRef: &v1alpha1.ConfigMapKeyRef{Name: configMap, Key: "jwks.json"}}}
		a.Spec.CardRefreshInterval = &metav1.Duration{Duration: time.Second}
	}
}

func (e *env) agentObject(name string) *v1alpha1.Agent {
	var a v1alpha1.Agent
	e.g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &a)).To(Succeed())
	return &a
}

func (e *env) agentReady(name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		return meta.FindStatusCondition(e.agentObject(name).Status.Conditions, "Ready")
	}
}

// A card signed by the Go agentkit is verified by the operator; the same
// card with one byte changed leaves the Agent not Ready and nothing is
// sent to it; a card that changes is verified again on its next read.
func TestACardSignedByTheAgentkitIsVerified(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	e := &env{t: t, g: g, ns: ns}
	e.op = startOperator(t, ns, testOptions())
	key := newCardKey(t, "kit-1")
	kit := newKitWorker(t, agentkit.WithCardSigningKey(key))
	cardKeysConfigMap(t, g, ns, "card-keys", key)

	e.createAgent("agent", kit.URL(), checkCardWith("card-keys", true))
	g.Eventually(e.agentReady("agent"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("True")),
		HaveField("Message", ContainSubstring(`card signed by key "kit-1" (ES256)`))))
	g.Expect(e.agentObject("agent").Status.CardSignature).To(Equal(&v1alpha1.AgentCardSignatureStatus{KeyID: "kit-1", Algorithm: "ES256"}))
	e.create(e.task("before", "work"))
	e.waitPhase("before", v1alpha1.PhaseSucceeded)

	// One byte of the card changes on the way: "kit-agent" becomes "kit-agenT".
	kit.SetCardFilter(func(b []byte) []byte { return bytes.Replace(b, []byte(`"kit-agent"`), []byte(`"kit-agenT"`), 1) })
	g.Eventually(e.agentReady("agent"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")),
		HaveField("Reason", ReasonCardSignatureInvalid),
		HaveField("Message", ContainSubstring(`the signature by key "kit-1" (ES256) does not match the card`))))
	g.Expect(e.agentObject("agent").Status.CardSignature).To(BeNil())
	sendsBefore := len(kit.Calls(func(c kitCall) bool { return c.Method == "SendMessage" }))
	e.create(e.task("while-refused", "work"))
	g.Consistently(func() v1alpha1.Phase { return e.get("while-refused").Status.Phase }, 3*time.Second, tick).
		Should(Or(BeEquivalentTo(""), Equal(v1alpha1.PhasePending)))
	g.Expect(kit.Calls(func(c kitCall) bool { return c.Method == "SendMessage" })).To(HaveLen(sendsBefore), "nothing is sent to a refused agent")

	// The card as signed again: Ready, and the waiting task goes out.
	kit.SetCardFilter(nil)
	g.Eventually(e.agentReady("agent"), eventually, tick).Should(HaveField("Status", BeEquivalentTo("True")))
	e.waitPhase("while-refused", v1alpha1.PhaseSucceeded)
}

// An unsigned card when a signature is required, and a card signed by a
// key that is not in the set, are refused; without required, an unsigned
// card is used and says so.
func TestCardsTheOperatorRefuses(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	e := &env{t: t, g: g, ns: ns}
	e.op = startOperator(t, ns, testOptions())
	trusted, other := newCardKey(t, "trusted"), newCardKey(t, "other")
	cardKeysConfigMap(t, g, ns, "card-keys", trusted)
	unsigned := newKitWorker(t)
	signedByOther := newKitWorker(t, agentkit.WithCardSigningKey(other))

	e.createAgent("unsigned-required", unsigned.URL(), checkCardWith("card-keys", true))
	e.createAgent("unsigned-optional", unsigned.URL(), checkCardWith("card-keys", false))
	e.createAgent("unknown-key", signedByOther.URL(), checkCardWith("card-keys", false))
	e.createAgent("no-keys", unsigned.URL(), checkCardWith("missing", false))

	g.Eventually(e.agentReady("unsigned-required"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")), HaveField("Reason", ReasonCardSignatureInvalid),
		HaveField("Message", ContainSubstring("the card is not signed"))))
	g.Eventually(e.agentReady("unknown-key"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")), HaveField("Reason", ReasonCardSignatureInvalid),
		HaveField("Message", ContainSubstring(`key "other" is not in the key set`))))
	g.Eventually(e.agentReady("unsigned-optional"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("True")), HaveField("Message", ContainSubstring("card not signed (not required)"))))
	g.Eventually(e.agentReady("no-keys"), eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")), HaveField("Reason", ReasonCardKeysUnavailable),
		HaveField("Message", ContainSubstring(`ConfigMap `+ns+`/missing key "jwks.json"`))))
}

// The API server refuses a key source naming both or neither.
func TestCardKeysNeedExactlyOneSource(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	for name, keys := range map[string]v1alpha1.CardKeys{
		"neither": {},
		"both": {ConfigMapKeyRef: &v1alpha1.ConfigMapKeyRef{Name: "a", Key: "k"},
			SecretKeyRef: &v1alpha1.SecretKeyRef{Name: "b", Key: "k"}},
	} {
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.AgentSpec{
			URL: "http://agent.example", CardSignature: &v1alpha1.AgentCardSignature{Keys: keys}}}
		err := k8sClient.Create(context.Background(), a)
		g.Expect(err).To(MatchError(ContainSubstring("exactly one of configMapKeyRef and secretKeyRef")), name)
	}
}
