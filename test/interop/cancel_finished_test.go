/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// notFollowed makes the operator leave a task alone between its send and a
// poll an hour later: no stream, so a task can end without its knowing.
func notFollowed(a *v1alpha1.Agent) {
	a.Spec.MaxStreams = ptr.To[int32](0)
	a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour}
}

// A cancel that reaches a task which finished before it (the operator had
// not seen the end) is refused by the agent as TaskNotCancelable; the
// operator reads the task back and records how it really ended. On every
// binding of the JS SDK, and at the TypeScript agentkit over JSON-RPC and
// over HTTP+JSON only.
func TestCancelOfAFinishedTask(t *testing.T) {
	for _, mode := range []string{modeV1, modeREST, modeV03} {
		t.Run("js-"+mode, func(t *testing.T) { cancelOfAFinishedTask(setup(t, mode, notFollowed), "input please") })
	}
	for name, worker := range map[string]**jsAgent{"ts-jsonrpc": &tsWorker, "ts-rest-signed": &tsRESTWorker} {
		t.Run(name, func(t *testing.T) { cancelOfAFinishedTask(setupTSAgent(t, *worker, notFollowed), "input") })
	}
}

func cancelOfAFinishedTask(e *env, ask string) {
	d := e.task("finished", ask)
	d.Spec.AgentRef.Name = agentOf(e)
	e.create(d)
	e.g.Eventually(func() string { return e.get("finished").Status.TaskID }, eventually, tick).ShouldNot(BeEmpty())
	d = e.get("finished")
	id, phase := d.Status.TaskID, d.Status.Phase // as the send's answer showed it
	e.g.Eventually(func() a2a.State { return e.readBack(id).State }, eventually, tick).Should(Equal(a2a.StateInputRequired))

	// The reply comes from elsewhere: the task completes, unseen.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := a2a.Dial(ctx, a2a.Endpoint{URL: e.agent.URL()})
	e.g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_, err = c.Send(ctx, a2a.SendRequest{MessageID: "elsewhere-" + id, ContextID: d.Status.ContextID, TaskID: id, Text: "blue"})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Eventually(func() a2a.State { return e.readBack(id).State }, eventually, tick).Should(Equal(a2a.StateCompleted))
	e.g.Expect(e.get("finished").Status.Phase).To(Equal(phase), "the operator has not seen the end")

	e.update("finished", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	d = e.waitPhase("finished", v1alpha1.PhaseSucceeded)
	e.g.Expect(e.agent.Cancelled(id)).To(BeTrue(), "the cancel reached the agent")
	e.g.Expect(d.Status.RemoteState).To(Equal(string(a2a.StateCompleted)))
	e.g.Expect(d.Status.Result).NotTo(BeNil())
	e.g.Expect(d.Status.Result.Text).To(Equal("got: blue"))
}

// agentOf is the name of the test's Agent.
func agentOf(e *env) string {
	if e.agent == tsWorker || e.agent == tsRESTWorker {
		return tsAgentName
	}
	return agentName
}
