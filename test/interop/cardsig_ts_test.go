/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

// Cards signed by the TypeScript agentkit (ts-worker-rest: serve's
// cardSigningKey, a key file as a mounted Secret holds it) verified by the
// Go side: by internal/a2a directly and by the operator, with the key set
// the kit printed (its publicKeySet) in a ConfigMap or a Secret. The other
// direction, and a signature both kits write byte for byte, is the shared
// vector internal/a2a/testdata/cardsig/vector.json, read by the Go tests
// and by the kit's own (sdk/typescript/test/cardsign.test.ts).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/controller"
	"github.com/tether-dev/tether/internal/delegation"
)

const (
	keysInConfigMap = "ConfigMap"
	keysInSecret    = "Secret"
	cardKeysName    = "ts-card-keys"
	cardKeysKey     = "jwks.json"
)

// cardKeys stores the TypeScript kit's key set in the test's namespace, in
// a ConfigMap or a Secret, and returns the reference to it.
func (e *env) cardKeys(kind string) v1alpha1.CardKeys {
	e.t.Helper()
	om := metav1.ObjectMeta{Namespace: e.ns, Name: cardKeysName}
	if kind == keysInSecret {
		// Agents use only the Secrets marked for them.
		om.Labels = map[string]string{agentio.AgentCredentialsLabel: "true"}
		e.g.Expect(kube.Create(context.Background(), &corev1.Secret{ObjectMeta: om,
			Data: map[string][]byte{cardKeysKey: []byte(tsCardKeySet)}})).To(Succeed())
		return v1alpha1.CardKeys{SecretKeyRef: &v1alpha1.SecretKeyRef{Name: cardKeysName, Key: cardKeysKey}}
	}
	e.g.Expect(kube.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: om,
		Data: map[string]string{cardKeysKey: tsCardKeySet}})).To(Succeed())
	return v1alpha1.CardKeys{ConfigMapKeyRef: &v1alpha1.ConfigMapKeyRef{Name: cardKeysName, Key: cardKeysKey}}
}

func requireCardSignature(keys v1alpha1.CardKeys) func(*v1alpha1.Agent) {
	return func(a *v1alpha1.Agent) {
		a.Spec.CardSignature = &v1alpha1.AgentCardSignature{Required: true, Keys: keys}
	}
}

// readCard reads the card as the operator does (asking for the 1.0 card).
func readCard(g *WithT, url string) []byte {
	req, err := http.NewRequest(http.MethodGet, url+"/.well-known/agent-card.json", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("A2A-Version", a2a.ProtocolV1)
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = res.Body.Close() }()
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(res.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return body
}

// The TypeScript kit's signature is verified by internal/a2a with the key
// set the kit printed; one byte of the card changed and it is not.
func TestTSAgentkitSignatureVerifiesInGo(t *testing.T) {
	requireAgents(t)
	t.Parallel()
	g := NewWithT(t)
	keys, err := a2a.ParseKeySet([]byte(tsCardKeySet))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys.Keys).To(HaveLen(1))
	g.Expect(keys.Keys[0].KeyID).To(Equal(tsCardKey.KeyID))
	g.Expect(keys.Keys[0].Use).To(Equal("sig"))
	card := readCard(g, tsRESTWorker.URL())

	g.Expect(a2a.VerifyCard(card, keys)).To(Equal(a2a.CardSignature{Signed: true, Verified: true, KeyID: "ts-kit", Algorithm: "ES256"}))

	changed := bytes.Replace(card, []byte(`"ts-worker"`), []byte(`"ts-workeR"`), 1)
	g.Expect(changed).NotTo(Equal(card))
	sig := a2a.VerifyCard(changed, keys)
	g.Expect(sig.Verified).To(BeFalse())
	g.Expect(errors.Is(sig.Err, a2a.ErrCardSignature)).To(BeTrue())
	g.Expect(sig.Err.Error()).To(ContainSubstring(`the signature by key "ts-kit" (ES256) does not match the card`))
}

// An Agent that requires a signed card becomes Ready on the TypeScript
// kit's card, with the key set in a ConfigMap or in a Secret; its task
// runs over HTTP+JSON.
func TestTSAgentkitSignedCardMakesTheAgentReady(t *testing.T) {
	for _, kind := range []string{keysInConfigMap, keysInSecret} {
		t.Run("keys-in-"+kind, func(t *testing.T) {
			requireAgents(t)
			t.Parallel()
			e := &env{t: t, g: NewWithT(t), agent: tsRESTWorker}
			e.ns = newNamespace(e)
			e.createAgent(tsAgentName, e.agent.URL(), "", requireCardSignature(e.cardKeys(kind)))

			a := e.waitAgentReady(tsAgentName, metav1.ConditionTrue)
			e.g.Expect(meta.FindStatusCondition(a.Status.Conditions, "Ready").Message).To(ContainSubstring(`card signed by key "ts-kit" (ES256)`))
			e.g.Expect(a.Status.CardSignature).To(Equal(&v1alpha1.AgentCardSignatureStatus{KeyID: "ts-kit", Algorithm: "ES256"}))
			e.g.Expect(a.Status.Binding).To(Equal(a2a.BindingHTTPJSON))

			e.create(e.tsTask("signed", "hello"))
			d := e.waitPhase("signed", v1alpha1.PhaseSucceeded)
			e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello"))
		})
	}
}

// The same card with one byte changed on the way (served from cardURL)
// leaves the Agent not Ready with CardSignatureInvalid, and nothing is sent.
func TestTSAgentkitCardChangedByOneByteIsRefused(t *testing.T) {
	requireAgents(t)
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), agent: tsRESTWorker}
	e.ns = newNamespace(e)
	changed := bytes.Replace(readCard(e.g, e.agent.URL()), []byte(`"ts-worker"`), []byte(`"ts-workeR"`), 1)
	cards := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(changed)
	}))
	t.Cleanup(cards.Close)
	e.createAgent(tsAgentName, e.agent.URL(), cards.URL+"/card.json", requireCardSignature(e.cardKeys(keysInConfigMap)))

	a := e.waitAgentReady(tsAgentName, metav1.ConditionFalse)
	ready := meta.FindStatusCondition(a.Status.Conditions, "Ready")
	e.g.Expect(ready.Reason).To(Equal(controller.ReasonCardSignatureInvalid))
	e.g.Expect(ready.Message).To(ContainSubstring(`the signature by key "ts-kit" (ES256) does not match the card`))
	e.g.Expect(a.Status.CardSignature).To(BeNil())

	e.create(e.tsTask("refused", "hello"))
	e.g.Consistently(func() v1alpha1.Phase { return e.get("refused").Status.Phase }, 3*time.Second, tick).
		Should(Or(BeEquivalentTo(""), Equal(v1alpha1.PhasePending)))
	e.g.Expect(e.agent.Sends(delegationContext(e, "refused"))).To(BeEmpty(), "nothing is sent to an agent whose card is refused")
}

// newNamespace makes a namespace for one test.
func newNamespace(e *env) string {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "interop-sig-"}}
	e.g.Expect(kube.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// createAgent makes an Agent for url (its card at cardURL when set).
func (e *env) createAgent(name, url, cardURL string, mutate ...func(*v1alpha1.Agent)) {
	e.t.Helper()
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.AgentSpec{
		URL:            url,
		CardURL:        cardURL,
		PollInterval:   &metav1.Duration{Duration: 200 * time.Millisecond},
		RequestTimeout: &metav1.Duration{Duration: 5 * time.Second},
	}}
	for _, m := range mutate {
		m(a)
	}
	e.g.Expect(kube.Create(context.Background(), a)).To(Succeed())
}

// waitAgentReady waits until the Agent's Ready condition has status and returns the Agent.
func (e *env) waitAgentReady(name string, status metav1.ConditionStatus) *v1alpha1.Agent {
	e.t.Helper()
	a := &v1alpha1.Agent{}
	e.g.Eventually(func(g Gomega) {
		g.Expect(kube.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, a)).To(Succeed())
		g.Expect(meta.FindStatusCondition(a.Status.Conditions, "Ready")).To(HaveField("Status", status), "conditions: %+v", a.Status.Conditions)
	}, eventually, tick).Should(Succeed())
	return a
}

// delegationContext is the context id the operator sends a Delegation's task in.
func delegationContext(e *env, name string) string {
	d := e.get(name)
	return delegation.ContextID(&d.Spec, string(d.UID))
}
