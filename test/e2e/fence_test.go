/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/test/faults"
)

const (
	// fenceTasks is how many Delegations are sent while each leader stops.
	fenceTasks   = 20
	fenceTimeout = 3 * time.Minute
)

// Two replicas of a shard send to an agent on a2a-go's default handler and
// store that stores each task 10 s after its SendMessage arrived. The
// leader is stopped with SIGTERM while sends wait at the agent, then its
// successor is killed (SIGKILL) while the next sends wait: no task runs
// twice, and every Delegation succeeds with the task it was sent as. The old
// leader's queued sends never leave once it stops leading, and a successor
// takes a look-up that finds nothing as proof only after the old sends'
// deadline.
func TestSlowStoringAgentAcrossLeaderStops(t *testing.T) {
	requireCluster(t)
	s := newShardInstall(t, "tether-fence", "shards=2", "replicasPerShard=2")
	agent := faults.NewSlowStoringAgent(2*time.Second, 10*time.Second)
	t.Cleanup(agent.Close)
	ns := s.tenantOf(0, 2, "fence", agent.URL(), 5*time.Second)
	s.start(0, "fence-a")
	s.start(0, "fence-b")
	for i, stop := range []struct {
		how  string
		stop func(*pod)
	}{
		{"SIGTERM", func(p *pod) { s.g.Expect(p.Stop(15 * time.Second)).To(Succeed()) }},
		{"SIGKILL", func(p *pod) { p.Kill() }},
	} {
		leader := s.leader()
		s.createAll(faults.Delegations(ns, "agent", fmt.Sprintf("round-%d", i), fenceTasks, fenceTimeout))
		s.g.Eventually(agent.Waiting).WithTimeout(timeout).WithPolling(50*time.Millisecond).
			Should(BeNumerically(">=", 4), "sends waiting at the agent")
		t.Logf("%s of the leader %s with %d sends waiting at the agent", stop.how, leader.Name(), agent.Waiting())
		stop.stop(leader)
		s.start(0, fmt.Sprintf("fence-%c", 'c'+i)) // as Kubernetes would: a new pod in its place
	}
	t.Log(s.expectSettledClean(ns, agent, 2*fenceTasks, fenceTimeout+time.Minute))
	s.expectNoPanic()
	s.deleteAll([]string{ns})
}

// leader waits until exactly one running process of the install leads.
func (s *shardInstall) leader() *pod {
	var found *pod
	s.g.Eventually(func(g Gomega) {
		found = nil
		for _, p := range s.pods {
			if !p.Exited() && leading.MatchString(p.Log()) {
				g.Expect(found).To(BeNil(), "two leaders")
				found = p
			}
		}
		g.Expect(found).NotTo(BeNil(), "no leader")
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
	return found
}
