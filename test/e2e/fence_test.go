/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/internal/shard"
	"github.com/tether-dev/tether/test/cluster"
)

// fenceTasks is how many Delegations are sent while each leader stops.
const fenceTasks = 20

// Two replicas of a shard send to an agent that stores each task 10 s after
// its SendMessage arrived. The leader is stopped with SIGTERM while sends
// wait at the agent, then its successor is killed (SIGKILL) while the next
// sends wait: no task runs twice (no message id reaches the agent twice),
// and every Delegation succeeds with the task it was sent as. The old
// leader's queued sends never leave once it stops leading, and a successor
// takes a look-up that finds nothing as proof only after the old sends'
// deadline.
func TestSlowStoringAgentAcrossLeaderStops(t *testing.T) {
	requireCluster(t)
	s := newShardInstall(t, "tether-fence", "shards=2", "replicasPerShard=2")
	s.agent.storeAfter = 10 * time.Second
	var ns string
	for k := 0; ns == ""; k++ {
		if c := fmt.Sprintf("fence-%s-%d", s.runID, k); shard.Of(c, 2).Index == 0 {
			ns = c
		}
	}
	s.tenant(ns, 5*time.Second)
	s.start(0, "fence-a")
	s.start(0, "fence-b")
	tasks := make([]client.ObjectKey, 0, 2*fenceTasks)
	for i, stop := range []struct {
		how  string
		stop func(*cluster.Process)
	}{
		{"SIGTERM", func(p *cluster.Process) { s.g.Expect(p.Stop(15 * time.Second)).To(Succeed()) }},
		{"SIGKILL", func(p *cluster.Process) { p.Kill() }},
	} {
		leader := s.leader()
		tasks = append(tasks, s.createLeased(ns, fmt.Sprintf("round-%d", i), fenceTasks, 30*time.Second)...)
		s.g.Eventually(s.agent.waiting.Load).WithTimeout(timeout).WithPolling(50*time.Millisecond).
			Should(BeNumerically(">=", 4), "sends waiting at the agent")
		t.Logf("%s of the leader %s with %d sends waiting at the agent", stop.how, leader.Name(), s.agent.waiting.Load())
		stop.stop(leader)
		s.start(0, fmt.Sprintf("fence-%c", 'c'+i)) // as Kubernetes would: a new pod in its place
	}
	waitTasksRunning(s.g, tasks)
	s.expectSucceeded(tasks)
	s.g.Expect(s.agent.duplicateSends()).To(BeEmpty(), "message ids that reached the agent twice (tasks run twice)")
	s.g.Expect(s.agent.sendCount()).To(Equal(len(tasks)), "one task per Delegation at the agent")
	for _, p := range s.procs {
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", p.Name(), cluster.Tail(p.Log(), 40))
		}
	}
	s.deleteAll([]string{ns})
}

// leader waits until exactly one running process of the install leads.
func (s *shardInstall) leader() *cluster.Process {
	var found *cluster.Process
	s.g.Eventually(func(g Gomega) {
		found = nil
		for _, p := range s.procs {
			if !p.Exited() && leading.MatchString(p.Log()) {
				g.Expect(found).To(BeNil(), "two leaders")
				found = p
			}
		}
		g.Expect(found).NotTo(BeNil(), "no leader")
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
	return found
}
