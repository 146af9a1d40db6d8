/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/conformance"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// conformanceWorker serves the sample worker; ignoreCancel makes it an
// agent whose CancelTask never reaches the task (the JSON-RPC call is read
// as a GetTask).
func conformanceWorker(t *testing.T, ignoreCancel bool) string {
	quiet := slog.New(slog.DiscardHandler)
	w := sample.Worker{Name: "worker", Steps: 1, Delay: 10 * time.Millisecond, Spend: 1, Log: quiet}
	srv := agentkit.NewServer(sample.WorkerCard(w.Name), w, agentkit.WithLogger(quiet))
	t.Cleanup(srv.Close)
	h := http.Handler(srv)
	if ignoreCancel {
		h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/" {
				body, _ := io.ReadAll(r.Body)
				body = bytes.Replace(body, []byte(`"method":"CancelTask"`), []byte(`"method":"GetTask"`), 1)
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
			}
			srv.ServeHTTP(rw, r)
		})
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// messageOnlyAgent answers every message with a message, never a task.
func messageOnlyAgent(t *testing.T) string {
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "chatty", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(hs.URL+"/", a2a.TransportProtocolJSONRPC)}}))
	mux.Handle("POST /{$}", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(messageOnlyExecutor{},
		a2asrv.WithLogger(slog.New(slog.DiscardHandler)))))
	return hs.URL
}

type messageOnlyExecutor struct{}

func (messageOnlyExecutor) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello")), nil)
	}
}

func (messageOnlyExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// startConformanceOperator runs the Agent controller and the conformance
// controller for one namespace, with a short check (card and core groups).
func startConformanceOperator(t *testing.T, ns string) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	connector := &agentio.Connector{SecretReader: mgr.GetAPIReader()}
	if err := (&AgentReconciler{Client: mgr.GetClient(), Connector: connector, Recorder: mgr.GetEventRecorder("tether")}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&AgentConformanceReconciler{Client: mgr.GetClient(), Connector: connector,
		Options: conformance.Options{Groups: []string{conformance.GroupCard, conformance.GroupCore}, Within: 10 * time.Second},
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}

func conformantOf(g Gomega, key client.ObjectKey) *metav1.Condition {
	var a v1alpha1.Agent
	g.Expect(k8sClient.Get(context.Background(), key, &a)).To(Succeed())
	return meta.FindStatusCondition(a.Status.Conditions, delegation.ConditionConformant)
}

func TestConformantConditionOnlyWhenAskedFor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	startConformanceOperator(t, ns)
	check := &v1alpha1.AgentConformance{Check: true}
	for name, spec := range map[string]v1alpha1.AgentSpec{
		"good":    {URL: conformanceWorker(t, false), Conformance: check},
		"broken":  {URL: conformanceWorker(t, true), Conformance: check},
		"chatty":  {URL: messageOnlyAgent(t), Conformance: check},
		"unasked": {URL: conformanceWorker(t, false)},
	} {
		g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
	}
	good, broken, unasked := client.ObjectKey{Namespace: ns, Name: "good"}, client.ObjectKey{Namespace: ns, Name: "broken"}, client.ObjectKey{Namespace: ns, Name: "unasked"}

	g.Eventually(func(g Gomega) {
		c := conformantOf(g, good)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(c.Reason).To(Equal(delegation.ReasonMustsPass))
	}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := conformantOf(g, broken)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(delegation.ReasonMustFailed), c.Message)
		// The first failure is named with what was seen.
		g.Expect(c.Message).To(HavePrefix("failed: " + conformance.CheckCancelWorking + "; " + conformance.CheckCancelWorking + " failed: "))
	}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	// An agent that answers only with messages is not Conformant, and the
	// condition says why.
	g.Eventually(func(g Gomega) {
		c := conformantOf(g, client.ObjectKey{Namespace: ns, Name: "chatty"})
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(delegation.ReasonMessageOnly), c.Message)
		g.Expect(c.Message).To(HavePrefix(conformance.MessageOnlyReason))
	}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Never by default: the Agent that did not ask is Ready without it.
	var a v1alpha1.Agent
	g.Expect(k8sClient.Get(ctx, unasked, &a)).To(Succeed())
	g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, delegation.ConditionReady)).To(BeTrue())
	g.Expect(meta.FindStatusCondition(a.Status.Conditions, delegation.ConditionConformant)).To(BeNil())
	g.Expect(a.Status.Conformance).To(BeNil())

	// The result is recorded, and turning the check off clears it.
	g.Expect(k8sClient.Get(ctx, broken, &a)).To(Succeed())
	g.Expect(a.Status.Conformance.Failed).To(ContainElement(conformance.CheckCancelWorking))
	g.Expect(a.Status.Conformance.LastCheckTime).NotTo(BeNil())
	a.Spec.Conformance.Check = false
	g.Expect(k8sClient.Update(ctx, &a)).To(Succeed())
	g.Eventually(func(g Gomega) {
		var a v1alpha1.Agent
		g.Expect(k8sClient.Get(ctx, broken, &a)).To(Succeed())
		g.Expect(meta.FindStatusCondition(a.Status.Conditions, delegation.ConditionConformant)).To(BeNil())
		g.Expect(a.Status.Conformance).To(BeNil())
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
