/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// reads counts the agent's GetTask calls of one task.
func (ta *testAgent) reads(taskID string) int {
	n := 0
	for _, c := range ta.Calls("GetTask") {
		if c.TaskID == taskID {
			n++
		}
	}
	return n
}

// A streamed task's end is taken from its stream: the whole task the
// stream began with, its result sent in two chunks and the spend reported
// with the end, settle the Delegation without a GetTask after the end.
func TestStreamedEndSettlesWithoutARead(t *testing.T) {
	e := setup(t)
	streaming := newStreamingTestAgent()
	t.Cleanup(streaming.Close)
	e.createAgent("streaming", streaming.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.g.Expect(e.waitAgentReady("streaming").Status.Streaming).To(BeTrue())
	e.create(e.kitTask("chunked", "streaming", "chunked", withBudget(v1alpha1.Meters{tokens: 30})))
	id := e.waitRunning("chunked").Status.TaskID

	// The stream's first event (the working task) is read, as any change
	// of a running task's state is; the task ends 2 s after it started.
	e.g.Eventually(func() int { return len(streaming.Calls("SubscribeToTask")) }, eventually, tick).Should(BeNumerically(">=", 1))
	e.g.Eventually(func() int { return streaming.reads(id) }, eventually, tick).Should(BeNumerically(">=", 1))
	before := streaming.reads(id)
	e.g.Expect(e.get("chunked").Status.Phase).To(Equal(v1alpha1.PhaseRunning), "still working when the reads were counted")

	d := e.waitPhase("chunked", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("chunk one\nchunk two"))
	e.g.Expect(d.Status.Result.Artifacts).To(HaveLen(1))
	e.g.Expect(ledger(d).Reported).To(Equal(v1alpha1.Meters{tokens: 7}), "the spend the end reported")
	e.g.Consistently(func() int { return streaming.reads(id) }, time.Second, tick).Should(Equal(before),
		"no GetTask after the end")
}

// A stream that reports the end without the whole task first cannot show
// the result: the task is read once, and the read settles it.
func TestStreamedEndWithoutTheTaskIsRead(t *testing.T) {
	e := setup(t)
	bare := newStreamingTestAgent()
	t.Cleanup(bare.Close)
	bare.bareStreams.Store(true)
	e.createAgent("bare", bare.URL(), func(a *v1alpha1.Agent) {
		a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
	})
	e.waitAgentReady("bare")
	e.create(e.kitTask("bare-end", "bare", "slow"))
	id := e.waitRunning("bare-end").Status.TaskID

	d := e.waitPhase("bare-end", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("slow done"), "the result as read, not the bare event's")
	e.g.Expect(bare.reads(id)).To(BeNumerically(">=", 1), "read after the stream's end")
}

// A push that carries the ended task whole, with a token that verified,
// settles the Delegation without a GetTask after the end.
func TestPushedWholeEndSettlesWithoutARead(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgentWith(true)}
	t.Cleanup(e.agent.Close)
	addr := freeLoopbackAddr(t)
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		var err error
		r.Push, err = NewPushReceiver(addr, "http://"+addr, nil, r.Client)
		e.g.Expect(err).NotTo(HaveOccurred())
	})
	e.createAgent("agent", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour} })
	e.g.Expect(e.waitAgentReady("agent").Status.PushNotifications).To(BeTrue())

	e.create(e.task("whole", "whole"))
	id := e.waitRunning("whole").Status.TaskID
	// The push of the working state is read; the task ends 3 s after it started.
	before := -1
	e.g.Eventually(func() bool {
		n := e.agent.reads(id)
		stable := n == before
		before = n
		return stable
	}, eventually, 500*time.Millisecond).Should(BeTrue())
	e.g.Expect(e.get("whole").Status.Phase).To(Equal(v1alpha1.PhaseRunning), "still working when the reads were counted")

	d := e.waitPhase("whole", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("whole done"))
	e.g.Consistently(func() int { return e.agent.reads(id) }, time.Second, tick).Should(Equal(before), "no GetTask after the end")
}

// A task's end pushed as a2a-go's sender posts it, an artifact update and
// then a status update without the artifacts, costs one GetTask after the
// end and one status write: the artifact alone is not read, and the end
// lacks the artifacts, so it is read once.
func TestPushedEndIsReadOnce(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgentWith(true)}
	t.Cleanup(e.agent.Close)
	addr := freeLoopbackAddr(t)
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		var err error
		r.Push, err = NewPushReceiver(addr, "http://"+addr, nil, r.Client)
		e.g.Expect(err).NotTo(HaveOccurred())
	})
	e.createAgent("agent", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour} })
	e.g.Expect(e.waitAgentReady("agent").Status.PushNotifications).To(BeTrue())
	w, err := k8sWatcher().Watch(context.Background(), &v1alpha1.DelegationList{}, client.InNamespace(e.ns))
	e.g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	e.create(e.task("pushed", "pushed-end"))
	id := e.waitRunning("pushed").Status.TaskID
	// The pushes of the working state are read; the artifact is pushed 3 s
	// after the task started, the end 2 s later.
	before := -1
	e.g.Eventually(func() bool {
		n := e.agent.reads(id)
		stable := n == before
		before = n
		return stable
	}, eventually, 500*time.Millisecond).Should(BeTrue())
	e.g.Expect(e.get("pushed").Status.Phase).To(Equal(v1alpha1.PhaseRunning), "still working when the reads were counted")

	d := e.waitPhase("pushed", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("pushed done"))
	e.g.Consistently(func() int { return e.agent.reads(id) }, time.Second, tick).Should(Equal(before+1), "one GetTask after the end")
	var phases []v1alpha1.Phase
	for drained := false; !drained; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Modified {
				phases = append(phases, ev.Object.(*v1alpha1.Delegation).Status.Phase)
			}
		case <-time.After(time.Second):
			drained = true
		}
	}
	e.g.Expect(phases).To(HaveLen(3), "the send marker, Running, Succeeded: %v", phases)
	e.g.Expect(phases[2]).To(Equal(v1alpha1.PhaseSucceeded), "the end is one status write")
}
