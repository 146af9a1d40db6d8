/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/test/faults"
)

// The short version of the benchmark's fault rows (make bench runs five
// seeds at 30% and 50% of 200 Delegations each).
const (
	faultRate        = 0.3
	faultDelegations = 40
	faultTimeout     = 4 * time.Minute
)

// Two replicas of the operator send to an agent on a2a-go's default handler
// and store through a proxy that fails 30% of all calls (resets before and
// after the agent acted, 503s, delays); the leader is SIGKILLed and its
// successor SIGTERMed while the Delegations run. Every Delegation succeeds
// within its timeout with the one task the agent ran for it: no message run
// twice, no task whose outcome was lost, nothing given up that the agent
// never saw. FAULTS_SEED picks another pattern of faults.
func TestFaultingProxyWithOperatorKills(t *testing.T) {
	requireCluster(t)
	seed := uint64(1)
	if v := os.Getenv("FAULTS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "FAULTS_SEED")
	}
	s := newShardInstall(t, "tether-faults", "shards=2", "replicasPerShard=2")
	agent, proxy := faults.NewProxiedAgent(2*time.Second, faults.Options{Rate: faultRate, Seed: seed})
	t.Cleanup(agent.Close)
	t.Cleanup(proxy.Close)
	ns := s.tenantOf(0, 2, "faults", agent.URL(), time.Second)
	s.start(0, "faults-a")
	s.start(0, "faults-b")
	newWorkspace(t, ns).waitAgentReady("agent")

	proxy.Arm()
	s.createAll(faults.Delegations(ns, "agent", "task", faultDelegations, faultTimeout))
	for i, stop := range []struct {
		how  string
		stop func(*pod)
	}{
		{"SIGKILL", func(p *pod) { p.Kill() }},
		{"SIGTERM", func(p *pod) { s.g.Expect(p.Stop(15 * time.Second)).To(Succeed()) }},
	} {
		time.Sleep(3 * time.Second) // sends and look-ups on their way through the proxy
		leader := s.leader()
		t.Logf("%s of the leader %s", stop.how, leader.Name())
		stop.stop(leader)
		s.start(0, fmt.Sprintf("faults-%c", 'c'+i)) // as Kubernetes would: a new pod in its place
	}
	tally := s.expectSettledClean(ns, agent, faultDelegations, faultTimeout+time.Minute)
	calls, injected := proxy.Counts()
	t.Logf("seed %d, %d calls through the proxy, faults %v: %s", seed, calls, injected, tally)
	s.g.Expect(injected[faults.Lose]).To(BeNumerically(">", 0), "answers lost after the agent acted")
	s.expectNoPanic()
	s.deleteAll([]string{ns})
}
