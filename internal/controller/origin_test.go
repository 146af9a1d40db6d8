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
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// An agent card on host A that advertises an interface on B leaves the Agent
// not Ready with OriginNotAllowed, and B receives nothing; listing B in
// allowedOrigins makes the Agent Ready.
func TestCardPointingElsewhereLeavesTheAgentNotReady(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	startOperator(t, ns, testOptions())

	var reachedB atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reachedB.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(b.Close)
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":"elsewhere","description":"d","version":"1",
			"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, b.URL+"/rpc")
	}))
	t.Cleanup(a.Close)

	e := &env{t: t, g: g, ns: ns}
	e.createAgent("elsewhere", a.URL)
	ready := func() *metav1.Condition {
		var agent v1alpha1.Agent
		g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "elsewhere"}, &agent)).To(Succeed())
		return meta.FindStatusCondition(agent.Status.Conditions, "Ready")
	}
	g.Eventually(ready, eventually, tick).Should(And(
		HaveField("Status", BeEquivalentTo("False")),
		HaveField("Reason", ReasonOriginNotAllowed),
		HaveField("Message", ContainSubstring("allowedOrigins"))))
	g.Expect(reachedB.Load()).To(BeZero())

	var agent v1alpha1.Agent
	g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "elsewhere"}, &agent)).To(Succeed())
	agent.Spec.AllowedOrigins = []string{b.URL}
	g.Expect(k8sClient.Update(context.Background(), &agent)).To(Succeed())
	g.Eventually(ready, eventually, tick).Should(HaveField("Status", BeEquivalentTo("True")))
}
