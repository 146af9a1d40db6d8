/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
)

// The operator uses a Secret only once its namespace marked it: until then
// the Agent is not Ready (SecretNotMarked) and the value is never sent.
func TestSecretsAreUsedOnlyWhenMarked(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	startOperator(t, ns, testOptions())

	var mu sync.Mutex
	var seen []string
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":"a","description":"d","version":"1",
			"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, "http://"+r.Host+"/rpc")
	}))
	t.Cleanup(agent.Close)
	headers := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, StringData: map[string]string{"token": "Bearer s3cret"}}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	e := &env{t: t, g: g, ns: ns}
	e.createAgent("agent", agent.URL, func(a *v1alpha1.Agent) {
		a.Spec.Headers = []v1alpha1.AgentHeader{{Name: "Authorization", ValueFrom: v1alpha1.SecretKeyRef{Name: "creds", Key: "token"}}}
	})
	ready := func() *metav1.Condition {
		var a v1alpha1.Agent
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "agent"}, &a)).To(Succeed())
		return meta.FindStatusCondition(a.Status.Conditions, "Ready")
	}
	g.Eventually(ready, eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")),
		HaveField("Reason", ReasonSecretNotMarked),
		HaveField("Message", ContainSubstring(AgentCredentialsLabel+"=true"))))
	g.Expect(headers()).To(BeEmpty(), "nothing is sent without the Secret")

	secret.Labels = map[string]string{AgentCredentialsLabel: "true"}
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	// The Agent is read again at its retry interval.
	g.Eventually(ready, eventually, tick).Should(HaveField("Status", BeEquivalentTo("True")))
	g.Expect(headers()).To(ContainElement("Bearer s3cret"))
}

func TestSecretConsentLabel(t *testing.T) {
	g := NewWithT(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	g.Expect(agentio.CheckSecretConsent(s)).To(MatchError(ErrSecretNotMarked))
	s.Labels = map[string]string{AgentCredentialsLabel: "false"}
	g.Expect(agentio.CheckSecretConsent(s)).To(MatchError(ErrSecretNotMarked))
	s.Labels[AgentCredentialsLabel] = "true"
	g.Expect(agentio.CheckSecretConsent(s)).To(Succeed())
}
