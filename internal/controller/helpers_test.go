/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/objects"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
)

// env is one test's namespace, agent and operator.
type env struct {
	t     *testing.T
	g     *WithT
	ns    string
	agent *testAgent
	op    *operator
}

// setup starts a namespace, a recording agent registered as Agent "agent",
// and an operator watching the namespace.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, testOptions())
}

// setupWith is setup with an operator run with opts.
func setupWith(t *testing.T, opts Options) *env {
	t.Helper()
	return setupWithReconciler(t, opts, nil)
}

// setupWithReconciler is setupWith whose test configures (or keeps) the
// DelegationReconciler before its manager starts.
func setupWithReconciler(t *testing.T, opts Options, configure func(*DelegationReconciler)) *env {
	t.Helper()
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	e.op = startOperatorWith(t, e.ns, opts, configure)
	e.createAgent("agent", e.agent.URL())
	return e
}

func (e *env) createAgent(name, url string, mutate ...func(*v1alpha1.Agent)) {
	e.t.Helper()
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.AgentSpec{
		URL: url, PollInterval: &metav1.Duration{Duration: 200 * time.Millisecond},
		RequestTimeout: &metav1.Duration{Duration: 2 * time.Second},
	}}
	for _, m := range mutate {
		m(a)
	}
	e.g.Expect(k8sClient.Create(context.Background(), a)).To(Succeed())
}

// task builds a Delegation to Agent "agent" with the given message text.
func (e *env) task(name, text string, mutate ...func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "agent"},
		Message:  &v1alpha1.Message{Text: text},
	}}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func childOf(parent string) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.ParentRef = &v1alpha1.LocalRef{Name: parent} }
}

func (e *env) create(d *v1alpha1.Delegation) {
	e.t.Helper()
	e.g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed())
}

func (e *env) objects() objects.Namespace {
	return objects.Namespace{Client: k8sClient, Name: e.ns, Timeout: eventually, Poll: tick}
}

func (e *env) get(name string) *v1alpha1.Delegation { return e.objects().Get(e.g, name) }

// waitPhase waits for a phase and returns the Delegation in it.
func (e *env) waitPhase(name string, phase v1alpha1.Phase) *v1alpha1.Delegation {
	e.t.Helper()
	return e.objects().WaitPhase(e.g, name, phase)
}

// waitRunning waits until the task was sent and is being followed.
func (e *env) waitRunning(name string) *v1alpha1.Delegation {
	e.t.Helper()
	d := e.waitPhase(name, v1alpha1.PhaseRunning)
	e.g.Expect(d.Status.TaskID).NotTo(BeEmpty())
	return d
}

// update changes a Delegation's spec, retrying on conflicts.
func (e *env) update(name string, mutate func(*v1alpha1.Delegation)) {
	e.t.Helper()
	e.objects().Update(e.g, name, mutate)
}

func clientKey(d *v1alpha1.Delegation) types.NamespacedName {
	return types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
}

// statusJSON shows a Delegation's metadata and status in a failure message.
func statusJSON(d *v1alpha1.Delegation) string {
	b, err := json.Marshal(struct {
		Annotations map[string]string         `json:"annotations,omitempty"`
		Finalizers  []string                  `json:"finalizers,omitempty"`
		Status      v1alpha1.DelegationStatus `json:"status"`
	}{d.Annotations, d.Finalizers, d.Status})
	if err != nil {
		return err.Error()
	}
	return string(b)
}
