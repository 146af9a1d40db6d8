/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/test/cluster"
)

// runningTask is a JSON-RPC answer to GetTask: a task still working.
var runningTask = []byte(`{"jsonrpc":"2.0","id":"1","result":{"id":"t-1","contextId":"ctx","status":{"state":"TASK_STATE_WORKING"}}}`)

// countingAgent answers every call with runningTask and counts the
// connections opened to it and closed; gate, when set, holds each answer
// until it is closed.
type countingAgent struct {
	*httptest.Server
	opened, closed, arrived atomic.Int64

	mu    sync.Mutex
	token string
	gate  chan struct{}
}

func newCountingAgent(t *testing.T) *countingAgent {
	a := &countingAgent{}
	a.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a.mu.Lock()
		a.token = r.Header.Get("X-Token")
		gate := a.gate
		a.mu.Unlock()
		a.arrived.Add(1)
		if gate != nil {
			<-gate
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(runningTask)
	}))
	a.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			a.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			a.closed.Add(1)
		}
	}
	a.Start()
	t.Cleanup(a.Close)
	return a
}

func (a *countingAgent) lastToken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token
}

// agentAt is an Agent whose card was read: JSON-RPC 1.0 at url.
func agentAt(url string) *v1alpha1.Agent {
	return &v1alpha1.Agent{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent", UID: "uid-1", Generation: 1},
		Spec:       v1alpha1.AgentSpec{URL: url},
		Status: v1alpha1.AgentStatus{ObservedGeneration: 1, CardName: "agent", Endpoint: url,
			Binding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolV1},
	}
}

// renew makes one renewal with the Connector's client for the Agent and
// returns the client it used.
func renew(g Gomega, c *Connector, agent *v1alpha1.Agent) a2a.Client {
	ctx := context.Background()
	cl, release, err := c.Client(ctx, agent, "")
	g.Expect(err).NotTo(HaveOccurred())
	defer release()
	_, err = cl.Get(ctx, "t-1", true)
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// The client of an Agent is built again every ClientTTL (its Secrets read
// again), but its connections stay: renewals before and after the rebuild
// go over the one connection opened first.
func TestConnectorKeepsConnectionsAcrossClientRebuilds(t *testing.T) {
	g := NewWithT(t)
	srv := newCountingAgent(t)
	c := &Connector{ClientTTL: 20 * time.Millisecond}
	agent := agentAt(srv.URL)
	first := renew(g, c, agent)
	g.Eventually(func() bool { return renew(g, c, agent) != first }).Should(BeTrue(), "the client is built again after ClientTTL")
	renew(g, c, agent)
	g.Expect(srv.opened.Load()).To(Equal(int64(1)), "every renewal on the first connection")
}

// An Agent whose pool runs more calls at once than net/http keeps idle
// connections by default (10) keeps one for each place: a second round of
// 20 calls at once opens no connection.
func TestConnectorKeepsAConnectionForEachPlaceOfThePool(t *testing.T) {
	g := NewWithT(t)
	srv := newCountingAgent(t)
	c := &Connector{}
	agent := agentAt(srv.URL)
	const places = 20
	agent.Spec.MaxConcurrentCalls = ptr.To(int32(places))
	round := func() {
		gate := make(chan struct{})
		srv.mu.Lock()
		srv.gate = gate
		srv.mu.Unlock()
		srv.arrived.Store(0)
		var wg sync.WaitGroup
		for range places {
			wg.Go(func() { renew(g, c, agent) })
		}
		g.Eventually(srv.arrived.Load).Should(Equal(int64(places)), "all calls at the agent at once")
		close(gate)
		wg.Wait()
	}
	round()
	g.Expect(srv.opened.Load()).To(Equal(int64(places)))
	round()
	g.Expect(srv.opened.Load()).To(Equal(int64(places)), "the second round on the first round's connections")
}

// On the real API server: an Agent's transport is kept while what it was
// built for stays the same, and a rotated credential or CA bundle, another
// URL, UID or pool size each get a new one; the rotated credential goes
// out on a new connection. A deleted Agent's connections are closed and
// its transport forgotten.
func TestConnectorBuildsANewTransportWhenWhatItIsBuiltForChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("needs an API server")
	}
	g := NewWithT(t)
	ctx := t.Context()
	kube := startAPIServer(t)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent-creds", Labels: map[string]string{AgentCredentialsLabel: "true"}},
		Data:       map[string][]byte{"token": []byte("one"), "ca": selfSignedPEM(t)},
	}
	g.Expect(kube.Create(ctx, secret)).To(Succeed())
	srv := newCountingAgent(t)
	c := &Connector{SecretReader: kube, ClientTTL: 20 * time.Millisecond}
	agent := agentAt(srv.URL)
	agent.Spec.Headers = []v1alpha1.AgentHeader{{Name: "X-Token", ValueFrom: v1alpha1.SecretKeyRef{Name: "agent-creds", Key: "token"}}}
	transport := func() *http.Client {
		ep, err := c.Endpoint(ctx, agent, "")
		g.Expect(err).NotTo(HaveOccurred())
		return ep.HTTPClient
	}
	kept := transport()
	g.Expect(transport()).To(BeIdenticalTo(kept), "nothing changed: the same transport")
	agent.Spec.PollInterval = &metav1.Duration{Duration: time.Minute}
	g.Expect(transport()).To(BeIdenticalTo(kept), "a change the connections do not depend on keeps it")

	renew(g, c, agent)
	g.Expect(srv.lastToken()).To(Equal("one"))
	secret.Data["token"] = []byte("two")
	g.Expect(kube.Update(ctx, secret)).To(Succeed())
	g.Eventually(func() string { renew(g, c, agent); return srv.lastToken() }).Should(Equal("two"),
		"the rotated credential is read when the client is built again")
	g.Expect(srv.opened.Load()).To(Equal(int64(2)), "and sent on a new connection")
	g.Eventually(srv.closed.Load).Should(Equal(int64(1)), "the old transport's idle connection is closed")
	kept = changed(g, transport, kept, "a rotated credential")

	agent.Spec.TLS = &v1alpha1.AgentTLS{CABundle: &v1alpha1.SecretKeyRef{Name: "agent-creds", Key: "ca"}}
	kept = changed(g, transport, kept, "a CA bundle")
	secret.Data["ca"] = selfSignedPEM(t)
	g.Expect(kube.Update(ctx, secret)).To(Succeed())
	kept = changed(g, transport, kept, "a rotated CA bundle")
	agent.Spec.URL = srv.URL + "/other"
	kept = changed(g, transport, kept, "another URL")
	agent.UID = "uid-2"
	kept = changed(g, transport, kept, "an Agent deleted and created again")
	agent.Spec.MaxConcurrentCalls = ptr.To(int32(32))
	kept = changed(g, transport, kept, "another pool size")

	renew(g, c, agent) // on the kept transport: a new connection
	g.Expect(srv.opened.Load()).To(Equal(int64(3)))
	key := types.NamespacedName{Namespace: agent.Namespace, Name: agent.Name}
	c.ForgetAgent(key)
	g.Eventually(srv.closed.Load).Should(Equal(int64(3)), "a forgotten Agent's connections are closed")
	c.mu.Lock()
	g.Expect(c.transports).NotTo(HaveKey(key), "and its transport forgotten")
	c.mu.Unlock()
	g.Expect(transport()).NotTo(BeIdenticalTo(kept))
}

// changed expects a new transport and returns it.
func changed(g Gomega, transport func() *http.Client, kept *http.Client, what string) *http.Client {
	now := transport()
	g.Expect(now).NotTo(BeIdenticalTo(kept), what+" gets a new transport")
	g.Expect(transport()).To(BeIdenticalTo(now), "which is kept")
	return now
}

func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	bin, err := cluster.BinDir("")
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kube, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// selfSignedPEM is a new CA certificate in PEM.
func selfSignedPEM(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
