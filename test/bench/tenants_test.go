/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// tenants measures one Agent shared by TenantNamespaces team namespaces
// through an AgentGrant, its pool of TenantPlaces call places kept full:
//   - two namespaces flood it without a quota, each keeping TenantBacklog
//     Delegations not yet sent;
//   - the other namespaces but one (steady) each create TenantRate
//     Delegations per second, whose dispatch (created → SendMessage at the
//     agent) is measured;
//   - before every other round the last one creates TenantFlood at once
//     under a DelegationQuota of TenantInFlight, so nearly all of them wait
//     Pending/QuotaExceeded through the round (the round starts once every
//     one of them shows a phase).
//
// Rounds alternate without and with the namespace at quota, so a machine
// that gets busier or quieter weighs on both sides. The operator's
// per-namespace pool metrics, read every 100 ms, show whether a flooding
// namespace held more than its fair share of places while others waited.
func (e *env) tenants() []row {
	t, sz := e.t, e.sz
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ag := newBenchAgent()
	ag.hold = sz.TenantHold
	defer ag.Close()
	agents := e.tenant("agents", ag.URL(), func(s *v1alpha1.AgentSpec) {
		pollEvery(time.Second)(s)
		s.MaxConcurrentCalls = ptr.To(int32(sz.TenantPlaces))
	})
	teams := make([]string, sz.TenantNamespaces)
	grant := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: agents, Name: "teams"}}
	for i := range teams {
		teams[i] = e.namespace("team")
		grant.Spec.From = append(grant.Spec.From, v1alpha1.GrantFrom{Namespace: teams[i]})
	}
	must(t, e.kube.Create(ctx, grant))
	floods, steady, atQuota := teams[:2], teams[2:len(teams)-1], teams[len(teams)-1]
	quota := &v1alpha1.DelegationQuota{ObjectMeta: metav1.ObjectMeta{Namespace: atQuota, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{InFlight: ptr.To(int32(sz.TenantInFlight))}}}
	must(t, e.kube.Create(ctx, quota))

	// One send from every namespace first: the grant is in the operator's
	// cache before anything is measured.
	warm := make([]client.Object, len(teams))
	for i, ns := range teams {
		warm[i] = sharedDelegation(ns, "warm", agents)
	}
	e.createAll(warm)
	e.waitUntil("every team's first send arrives", e.sz.Wait, func() bool {
		for _, ns := range teams {
			if _, ok := ag.sendAt(ns + "/warm"); !ok {
				return false
			}
		}
		return true
	})

	pool := agents + "/agent"
	sampler := e.samplePool(ctx, pool, 100*time.Millisecond)
	var flooding sync.WaitGroup
	for _, ns := range floods {
		flooding.Go(func() { e.keepBacklog(ctx, ag, agents, ns, sz.TenantBacklog) })
	}
	e.waitUntil("both floods wait at the shared Agent's pool", time.Minute, func() bool {
		s, ok := sampler.latest()
		return ok && s.queued[floods[0]] > 0 && s.queued[floods[1]] > 0
	})

	var without, with []time.Duration
	var shown []time.Duration // the namespace at quota's flood created → every one of it shown a phase
	waitingAtEnd := -1
	for round := range 2 * sz.TenantRounds {
		prefix := fmt.Sprintf("s%d", round)
		atQuotaRound := round%2 == 1
		if atQuotaRound {
			start, floodPrefix := time.Now(), fmt.Sprintf("q%d-", round)
			flood := make([]client.Object, sz.TenantFlood)
			for i := range flood {
				flood[i] = sharedDelegation(atQuota, fmt.Sprintf("%s%05d", floodPrefix, i), agents)
			}
			e.createAll(flood)
			// Measured at quota, not while its flood's first passes are
			// made: those wait in the work queue like anyone's.
			e.waitUntil("the flood at quota is shown Pending or started", e.sz.Wait, func() bool {
				return e.seen.countNamed(atQuota, floodPrefix, func(p v1alpha1.Phase) bool { return p != "" }) == sz.TenantFlood
			})
			shown = append(shown, time.Since(start))
		}
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			if round < 2 { // the first round each way
				e.profile(fmt.Sprintf("profile?seconds=%d", int(sz.TenantRun.Seconds())), fmt.Sprintf("operator-cpu-tenants-round%d.pprof", round+1))
			}
		}()
		sends := e.steadyRound(ag, agents, steady, prefix)
		<-profiled
		if !atQuotaRound {
			without = append(without, sends...)
			t.Logf("tenants: round %d without a namespace at quota: steady dispatch p50 %.1f ms, p99 %.1f ms", round+1,
				millis(percentile(sends, 0.5)), millis(percentile(sends, 0.99)))
			continue
		}
		with = append(with, sends...)
		must(t, e.kube.Get(ctx, client.ObjectKeyFromObject(quota), quota))
		if w := int(quota.Status.Used.Waiting); waitingAtEnd < 0 || w < waitingAtEnd {
			waitingAtEnd = w
		}
		t.Logf("tenants: round %d beside %d created at once under inFlight %d (all shown Pending after %s; %d sent, %d waiting at the end): "+
			"steady dispatch p50 %.1f ms, p99 %.1f ms", round+1, sz.TenantFlood, sz.TenantInFlight, shown[len(shown)-1].Round(time.Millisecond),
			ag.sendsWithPrefix(fmt.Sprintf("%s/q%d-", atQuota, round)), quota.Status.Used.Waiting,
			millis(percentile(sends, 0.5)), millis(percentile(sends, 0.99)))
		e.deleteAll(atQuota)
		e.waitUntil("the quota's use is back to nothing", e.sz.Wait, func() bool {
			return e.kube.Get(ctx, client.ObjectKeyFromObject(quota), quota) == nil &&
				quota.Status.Used.InFlight == 0 && quota.Status.Used.Waiting == 0
		})
	}
	e.saveMetrics("operator-metrics-tenants.txt")
	stop()
	flooding.Wait()
	samples := sampler.wait()
	for _, ns := range floods {
		t.Logf("tenants: %s (flooding without a quota) was sent %d", ns, ag.sendsWithPrefix(ns+"/f-"))
	}
	for _, ns := range teams {
		e.deleteAll(ns)
	}

	share := checkFairShare(samples, floods, sz.TenantPlaces, 2*sz.TenantHold+200*time.Millisecond, 500*time.Millisecond)
	t.Logf("tenants: %d pool samples; %d where a flooding namespace and another waited throughout the window", len(samples), share.Samples)
	floor := fmt.Sprintf("the same %d steady namespaces without it (%d rounds each way, alternating; two floods without a quota in both)",
		len(steady), sz.TenantRounds)
	return []row{
		{Name: "shared Agent: steady dispatch p50, a namespace at quota", Unit: "ms", Value: millis(percentile(with, 0.5)),
			Floor: millis(percentile(without, 0.5)), FloorOf: floor, Target: "≤ 1.2× floor", Met: ratioAtMost(1.2)},
		{Name: "shared Agent: steady dispatch p99, a namespace at quota", Unit: "ms", Value: millis(percentile(with, 0.99)),
			Floor: millis(percentile(without, 0.99)), FloorOf: floor},
		{Name: "shared Agent: places held by a flood while others waited", Unit: "places", Value: float64(share.Held),
			Floor: float64(share.Share), FloorOf: fmt.Sprintf("fair share: ceil(%d places / %d namespaces waiting), at the worst of %d samples",
				sz.TenantPlaces, share.Waiting, share.Samples), Target: "≤ floor", Met: ratioAtMost(1)},
		{Name: "namespace at quota: waiting at a round's end", Unit: "Delegations", Value: float64(waitingAtEnd),
			FloorOf: fmt.Sprintf("of %d created at once under inFlight %d (the fewer of %d rounds)", sz.TenantFlood, sz.TenantInFlight, sz.TenantRounds)},
		{Name: "namespace at quota: its flood shown Pending", Unit: "s", Value: seconds(slices.Max(shown)),
			FloorOf: fmt.Sprintf("%d created at once → every one shown a phase (the longer of %d rounds; before the steady sends)", sz.TenantFlood, sz.TenantRounds)},
	}
}

// sharedDelegation is a Delegation of ns to the Agent "agent" of the agents
// namespace; the agent holds its send and knows it as "ns/name".
func sharedDelegation(ns, name, agents string) *v1alpha1.Delegation {
	return &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent", Namespace: agents},
			Message: &v1alpha1.Message{Text: "hold id=" + ns + "/" + name}},
	}
}

// steadyRound creates TenantRate Delegations per second in each steady
// namespace (in turn) for TenantRun and returns each one's creation →
// SendMessage at the agent; one not sent within Wait counts as Wait.
func (e *env) steadyRound(ag *benchAgent, agents string, steady []string, prefix string) []time.Duration {
	sz := e.sz
	rate := sz.TenantRate * float64(len(steady))
	n := max(1, int(sz.TenantRun.Seconds()*rate))
	type creation struct {
		id string
		at time.Time
	}
	created := make([]creation, n)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	var wg sync.WaitGroup
	for i := range n {
		<-tick.C
		ns, name := steady[i%len(steady)], fmt.Sprintf("%s-%05d", prefix, i)
		wg.Go(func() {
			created[i] = creation{id: ns + "/" + name, at: time.Now()}
			if err := e.kube.Create(context.Background(), sharedDelegation(ns, name, agents)); err != nil {
				e.t.Error(err)
			}
		})
	}
	tick.Stop()
	wg.Wait()
	arrived := func() int {
		k := 0
		for _, c := range created {
			if _, ok := ag.sendAt(c.id); ok {
				k++
			}
		}
		return k
	}
	if !e.tryUntil(sz.Wait, func() bool { return arrived() == n }) {
		e.t.Logf("tenants: only %d of %d steady sends arrived within %s; the rest count as %s", arrived(), n, sz.Wait, sz.Wait)
	}
	out := make([]time.Duration, 0, n)
	for _, c := range created {
		at, ok := ag.sendAt(c.id)
		if !ok {
			at = c.at.Add(sz.Wait)
		}
		out = append(out, at.Sub(c.at))
	}
	return out
}

// keepBacklog floods ns until ctx ends: n Delegations at once, then n/2
// more whenever fewer than n/2 of them wait to be sent.
func (e *env) keepBacklog(ctx context.Context, ag *benchAgent, agents, ns string, n int) {
	created := 0
	add := func(k int) {
		objs := make([]client.Object, k)
		for i := range objs {
			objs[i] = sharedDelegation(ns, fmt.Sprintf("f-%06d", created+i), agents)
		}
		e.createNow(ctx, objs)
		created += k
	}
	add(n)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if created-ag.sendsWithPrefix(ns+"/f-") < n/2 {
			add(max(1, n/2))
		}
	}
}

// createNow creates the objects at once, a goroutine each, and returns when
// every create was answered. Errors fail the run without stopping it (it
// runs beside the test's goroutine); those after ctx ended are ignored.
func (e *env) createNow(ctx context.Context, objs []client.Object) {
	var wg sync.WaitGroup
	for _, o := range objs {
		wg.Go(func() {
			if err := e.kube.Create(ctx, o); err != nil && ctx.Err() == nil {
				e.t.Error(err)
			}
		})
	}
	wg.Wait()
}
