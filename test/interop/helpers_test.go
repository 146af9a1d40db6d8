/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/test/cluster"
	"github.com/tether-dev/tether/test/objects"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
	agentName  = "js"
)

// requireAgents skips the test when the JS agent cannot run here, or fails
// it when INTEROP_REQUIRED is set.
func requireAgents(t *testing.T) {
	t.Helper()
	if skipReason == "" {
		return
	}
	if os.Getenv("INTEROP_REQUIRED") != "" {
		t.Fatalf("INTEROP_REQUIRED is set but %s", skipReason)
	}
	t.Skip(skipReason)
}

// forEachProtocol runs test against the 1.0 JSON-RPC agent, the 1.0
// HTTP+JSON-only one and the 0.3-only one, in parallel.
func forEachProtocol(t *testing.T, test func(e *env)) {
	t.Helper()
	for _, mode := range []string{modeV1, modeREST, modeV03} {
		t.Run("protocol-"+mode, func(t *testing.T) { test(setup(t, mode)) })
	}
}

// env is one test's namespace, with an Agent "js" for one JS agent.
type env struct {
	t     *testing.T
	g     *WithT
	ns    string
	agent *jsAgent
}

// setup makes a namespace with an Agent for the JS agent running in mode.
func setup(t *testing.T, mode string, mutate ...func(*v1alpha1.Agent)) *env {
	t.Helper()
	requireAgents(t)
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), agent: agents[mode]}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "interop-"}}
	e.g.Expect(kube.Create(context.Background(), ns)).To(Succeed())
	e.ns = ns.Name
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("js-echo (%s) log:\n%s", mode, cluster.Tail(e.agent.Log(), 30))
		}
	})
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: agentName}, Spec: v1alpha1.AgentSpec{
		URL:            e.agent.URL(),
		PollInterval:   &metav1.Duration{Duration: 200 * time.Millisecond},
		RequestTimeout: &metav1.Duration{Duration: 5 * time.Second},
	}}
	for _, m := range mutate {
		m(a)
	}
	e.g.Expect(kube.Create(context.Background(), a)).To(Succeed())
	return e
}

// task builds a Delegation to the JS agent with the given message text.
func (e *env) task(name, text string, mutate ...func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: agentName},
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
	e.g.Expect(kube.Create(context.Background(), d)).To(Succeed())
}

func (e *env) objects() objects.Namespace {
	return objects.Namespace{Client: kube, Name: e.ns, Timeout: eventually, Poll: tick}
}

func (e *env) get(name string) *v1alpha1.Delegation {
	e.t.Helper()
	return e.objects().Get(e.g, name)
}

// waitPhase waits for a phase and returns the Delegation in it.
func (e *env) waitPhase(name string, phase v1alpha1.Phase) *v1alpha1.Delegation {
	e.t.Helper()
	return e.objects().WaitPhase(e.g, name, phase)
}

// waitRunning waits until the task was sent and the agent logged it.
func (e *env) waitRunning(name string) *v1alpha1.Delegation {
	e.t.Helper()
	d := e.waitPhase(name, v1alpha1.PhaseRunning)
	e.g.Expect(d.Status.TaskID).NotTo(BeEmpty())
	e.waitLogged("task " + d.Status.TaskID + " received")
	return d
}

// waitLogged waits until the JS agent printed s.
func (e *env) waitLogged(s string) {
	e.t.Helper()
	e.g.Eventually(func() bool { return e.agent.Logged(s) }, eventually, tick).Should(BeTrue(), "the JS agent did not print %q", s)
}

// update changes a Delegation's spec, retrying on conflicts.
func (e *env) update(name string, mutate func(*v1alpha1.Delegation)) {
	e.t.Helper()
	e.objects().Update(e.g, name, mutate)
}

// readBack reads a task from the agent with tether's A2A client, as the
// agent's card describes it.
func (e *env) readBack(taskID string) *a2a.Task {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a2a.Dial(ctx, a2a.Endpoint{URL: e.agent.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	t, err := c.Get(ctx, taskID, false)
	e.g.Expect(err).NotTo(HaveOccurred())
	return t
}
