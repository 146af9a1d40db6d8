/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/objects"
)

const (
	timeout = 60 * time.Second
	tick    = 100 * time.Millisecond
)

// workspace is a namespace where a test creates Agents and Delegations as
// an admin would, and watches what the operator makes of them.
type workspace struct {
	t  *testing.T
	g  *WithT
	ns string
}

// newNamespace creates a namespace, deleted at the end of the test.
func newNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	NewWithT(t).Expect(kube.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() { _ = kube.Delete(context.Background(), ns) })
}

func newWorkspace(t *testing.T, ns string) *workspace {
	return &workspace{t: t, g: NewWithT(t), ns: ns}
}

// deleteDelegationsOnCleanup deletes what the test left while the operator
// still runs (register it after startOperator), so no finalizer outlives it.
func (w *workspace) deleteDelegationsOnCleanup() {
	w.t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.DeleteAllOf(ctx, &v1alpha1.Delegation{}, client.InNamespace(w.ns))
		w.g.Eventually(func(g Gomega) {
			list := &v1alpha1.DelegationList{}
			g.Expect(kube.List(ctx, list, client.InNamespace(w.ns))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
	})
}

func (w *workspace) createAgent(name, url string) {
	w.createAgentPolled(name, url, 200*time.Millisecond)
}

// createAgentPolled creates an Agent read back every poll. A leased task is
// read at the shorter of poll and ttl/3, and every read of it carries the
// lease extension: a test that measures renewals polls no more often than
// ttl/3, else it counts polls.
func (w *workspace) createAgentPolled(name, url string, poll time.Duration) {
	w.t.Helper()
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}, Spec: v1alpha1.AgentSpec{
		URL: url, PollInterval: &metav1.Duration{Duration: poll},
	}}
	w.g.Expect(kube.Create(context.Background(), a)).To(Succeed())
}

func (w *workspace) waitAgentReady(name string) {
	w.t.Helper()
	objects.Until(w.g, kube, timeout, tick, client.ObjectKey{Namespace: w.ns, Name: name}, &v1alpha1.Agent{}, &v1alpha1.AgentList{},
		func(a *v1alpha1.Agent) error {
			if !meta.IsStatusConditionTrue(a.Status.Conditions, "Ready") {
				return fmt.Errorf("agent %s not Ready: %+v", name, a.Status.Conditions)
			}
			return nil
		})
}

// task is a Delegation to Agent "worker"; the text drives the sample worker
// ("forever" keeps it working until cancelled).
func (w *workspace) task(name, text, parent string) *v1alpha1.Delegation {
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "worker"},
		Message:  &v1alpha1.Message{Text: text},
	}}
	if parent != "" {
		d.Spec.ParentRef = &v1alpha1.LocalRef{Name: parent}
	}
	w.g.Expect(kube.Create(context.Background(), d)).To(Succeed())
	return d
}

func (w *workspace) objects() objects.Namespace {
	return objects.Namespace{Client: kube, Name: w.ns, Timeout: timeout, Poll: tick}
}

func (w *workspace) get(name string) *v1alpha1.Delegation {
	w.t.Helper()
	return w.objects().Get(w.g, name)
}

func (w *workspace) getIfExists(name string) (*v1alpha1.Delegation, error) {
	d := &v1alpha1.Delegation{}
	return d, kube.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, d)
}

func (w *workspace) waitPhase(name string, phase v1alpha1.Phase) *v1alpha1.Delegation {
	w.t.Helper()
	return w.objects().WaitPhase(w.g, name, phase)
}

func (w *workspace) waitGone(name string) {
	w.t.Helper()
	objects.Until(w.g, kube, timeout, tick, client.ObjectKey{Namespace: w.ns, Name: name}, &v1alpha1.Delegation{},
		&v1alpha1.DelegationList{}, nil)
}

func (w *workspace) update(name string, mutate func(*v1alpha1.Delegation)) {
	w.t.Helper()
	w.objects().Update(w.g, name, mutate)
}

// outcome is what one watch event showed of a Delegation.
type outcome struct {
	Phase  v1alpha1.Phase
	Reason string
}

// history records every phase and outcome reason each Delegation of a
// namespace went through. Polling could miss a state the garbage collector
// removes within a second; a watch sees them all.
type history struct {
	mu   sync.Mutex
	seen map[string][]outcome
}

func (w *workspace) watchHistory() *history {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := kube.Watch(ctx, &v1alpha1.DelegationList{}, client.InNamespace(w.ns))
	w.g.Expect(err).NotTo(HaveOccurred())
	h := &history{seen: map[string][]outcome{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			d, ok := ev.Object.(*v1alpha1.Delegation)
			if !ok {
				continue
			}
			o := outcome{Phase: d.Status.Phase}
			if d.Status.Outcome != nil {
				o.Reason = d.Status.Outcome.Reason
			}
			h.mu.Lock()
			h.seen[d.Name] = append(h.seen[d.Name], o)
			h.mu.Unlock()
		}
	}()
	w.t.Cleanup(func() {
		watcher.Stop()
		cancel()
		<-done
	})
	return h
}

func (h *history) of(name string) []outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]outcome(nil), h.seen[name]...)
}
