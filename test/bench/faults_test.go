/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/test/faults"
)

// faultRuns sends Delegations to an agent on a2a-go's default handler and
// store through a proxy that fails a share of all calls (resets before and
// after the agent acted, 503s, delays), SIGKILLing the operator and starting
// it again while they run, once per rate and seed. Each run gives rows of
// tasks run twice, tasks whose outcome was lost and Delegations given up
// that the agent never saw (all should be 0), and the share settled within
// its deadline (all should be).
func (e *env) faultRuns() []row {
	rows := make([]row, 0, 4*len(e.sz.FaultRates)*e.sz.FaultSeeds)
	for _, rate := range e.sz.FaultRates {
		for seed := range e.sz.FaultSeeds {
			rows = append(rows, e.faultRun(rate, uint64(seed+1))...)
		}
	}
	return rows
}

func (e *env) faultRun(rate float64, seed uint64) []row {
	agent, proxy := faults.NewProxiedAgent(time.Second, faults.Options{Rate: rate, Seed: seed})
	defer agent.Close()
	defer proxy.Close()
	ns := e.tenant("faults", agent.URL(), pollEvery(time.Second))
	proxy.Arm()
	ds := faults.Delegations(ns, "agent", "f", e.sz.FaultN, e.sz.FaultTimeout)
	objs := make([]client.Object, len(ds))
	for i, d := range ds {
		objs[i] = d
	}
	start := time.Now()
	e.createAll(objs)
	// Kills at random points of the first minute, while sends, look-ups
	// and polls are on their way.
	kills := rand.New(rand.NewPCG(seed, uint64(rate*100)))
	for range e.sz.FaultKills {
		time.Sleep(time.Duration(kills.Int64N(int64(time.Minute / time.Duration(max(1, e.sz.FaultKills))))))
		e.operator.Kill()
		e.startOperator()
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.sz.FaultTimeout+time.Minute)
	defer cancel()
	settled, err := faults.Settled(ctx, e.kube, ns)
	tally := faults.Count(settled, agent.Tasks())
	calls, injected := proxy.Counts()
	e.t.Logf("faults at %.0f%%, seed %d: %s after %s; %d calls, faults %v; %v %v", rate*100, seed, tally,
		time.Since(start).Round(time.Second), calls, injected, tally.Examples, err)
	e.deleteAll(ns)

	name := fmt.Sprintf("faults %.0f%% seed %d, %d Delegations, %d kills: ", rate*100, seed, len(ds), e.sz.FaultKills)
	inTime := 100 * float64(tally.Delegations-tally.PastDeadline) / float64(max(1, tally.Delegations))
	return []row{
		{Name: name + "tasks run twice", Unit: "tasks", Value: float64(tally.Duplicates), Target: "0", Met: valueAtMost(0)},
		{Name: name + "outcomes lost", Unit: "tasks", Value: float64(tally.LostOutcomes), Target: "0", Met: valueAtMost(0)},
		{Name: name + "needless give-ups", Unit: "Delegations", Value: float64(tally.NeedlessGiveUps), Target: "0", Met: valueAtMost(0)},
		{Name: name + "settled within the deadline", Unit: "%", Value: inTime, Target: "100", Met: valueNotBelow(100)},
	}
}
