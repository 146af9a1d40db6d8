/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// cancelRaces is how many children race their parent's cancel: 200 in
// make test, CANCEL_RACES for more (1000 was run; see the note).
func cancelRaces(t *testing.T) int {
	s := os.Getenv("CANCEL_RACES")
	if s == "" {
		return 200
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("CANCEL_RACES=%q: want a positive number", s)
	}
	return n
}

// A parent is cancelled while its children's sends are queued, on their
// way, or held at the agent for 0–200 ms before it stores the task (a
// look-up made meanwhile finds nothing). Every task that started at the
// agent is cancelled there, and every child ends Canceled: a cancel waits
// for a send on its way and cancels the task it started, and no send leaves
// after the cascade.
func TestCascadeRacingSendsCancelsEveryTaskThatStarted(t *testing.T) {
	e := setup(t)
	e.agent.holdSendsUpTo.Store(int64(200 * time.Millisecond))
	e.createAgent("racy", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.MaxConcurrentCalls = ptr.To[int32](32) })
	onRacy := func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "racy" }
	races, perRound := cancelRaces(t), 50
	var children []string
	for round := 0; round*perRound < races; round++ {
		root := fmt.Sprintf("root-%d", round)
		e.create(e.task(root, "wait", onRacy))
		e.waitRunning(root)
		// The cancel comes at a random moment while the children are
		// created and sent.
		cancelAt := time.After(time.Duration(rand.Int64N(int64(400 * time.Millisecond))))
		cancelled := false
		for i := range min(perRound, races-round*perRound) {
			name := fmt.Sprintf("child-%d-%d", round, i)
			e.create(e.task(name, "wait", onRacy, childOf(root)))
			children = append(children, name)
			select {
			case <-cancelAt:
				if !cancelled {
					e.update(root, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
					cancelled = true
				}
			default:
			}
		}
		if !cancelled {
			<-cancelAt
			e.update(root, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		}
	}
	started, cancelled := 0, 0
	for _, name := range children {
		d := e.waitPhase(name, v1alpha1.PhaseCanceled)
		tasks, err := e.agent.TasksOf("tether-" + string(d.UID))
		e.g.Expect(err).NotTo(HaveOccurred())
		e.g.Expect(len(tasks)).To(BeNumerically("<=", 1), "%s: more than one task at the agent", name)
		for _, task := range tasks {
			started++
			if task.Status.State == a2a.TaskStateCanceled {
				cancelled++
			}
			e.g.Expect(task.Status.State).To(Equal(a2a.TaskStateCanceled),
				"%s: its task %s started at the agent and was never cancelled (%s)", name, task.ID, statusJSON(d))
		}
	}
	t.Logf("%d children raced their parent's cancel: %d tasks had started at the agent, %d of them cancelled there",
		len(children), started, cancelled)
}
