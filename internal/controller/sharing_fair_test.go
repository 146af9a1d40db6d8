/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
)

// Twenty namespaces with mixed load at one shared Agent of four places, on
// the real API server: one namespace holds every place first; then all
// the others' sends wait, and the agent lets the sends through one at a
// time. Each freed place goes to the waiting namespace holding the fewest,
// so none is given more than ceil(places / waiting namespaces) while
// others wait, and the pool reports its load by namespace.
func TestASharedAgentsPlacesAreSplitFairlyOnTheAPIServer(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	const places = 4
	agents := newNamespace(t)
	teams := make([]string, 20)
	load := map[string]int{}
	for i := range teams {
		teams[i] = newNamespace(t)
		switch {
		case i == 0:
			load[teams[i]] = 24
		case i < 5:
			load[teams[i]] = 6
		default:
			load[teams[i]] = 2
		}
	}
	heavy := teams[0]

	type arrival struct {
		ns      string
		release chan struct{}
	}
	arrivals := make(chan arrival, 256)
	agent := newTestAgent()
	t.Cleanup(agent.Close)
	gate := func(ctx context.Context, text string) bool {
		ns, _, _ := strings.Cut(text, " ")
		a := arrival{ns: ns, release: make(chan struct{})}
		arrivals <- a
		select {
		case <-a.release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	agent.gateSends.Store(&gate)

	opts := testOptions()
	opts.SendTimeout = 5 * time.Minute // no send waits past its recorded deadline here
	var calls *agentio.Dispatcher
	startOperatorIn(t, cfg, append([]string{agents}, teams...), opts, func(r *DelegationReconciler) { calls = r.Calls })
	g.Expect(k8sClient.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: agents, Name: "shared"},
		Spec: v1alpha1.AgentSpec{URL: agent.URL(), RequestTimeout: &metav1.Duration{Duration: time.Minute},
			MaxConcurrentCalls: ptr.To[int32](places)}})).To(Succeed())
	grant := &v1alpha1.AgentGrant{ObjectMeta: metav1.ObjectMeta{Namespace: agents, Name: "teams"}}
	for _, ns := range teams {
		grant.Spec.From = append(grant.Spec.From, v1alpha1.GrantFrom{Namespace: ns})
	}
	g.Expect(k8sClient.Create(ctx, grant)).To(Succeed())
	created := map[string]int{}
	send := func(ns string) {
		i := created[ns]
		created[ns]++
		g.Expect(k8sClient.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("task-%02d", i)},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "shared", Namespace: agents},
				Message: &v1alpha1.Message{Text: fmt.Sprintf("%s #%d", ns, i)}}})).To(Succeed())
	}
	next := func() arrival {
		select {
		case a := <-arrivals:
			return a
		case <-time.After(eventually):
			t.Fatal("no send took the freed place")
			return arrival{}
		}
	}

	held := map[string]int{}
	waiting := map[string]int{}
	var inFlight []arrival
	for range places {
		send(heavy)
	}
	for range places {
		a := next()
		g.Expect(a.ns).To(Equal(heavy), "alone, a namespace uses every place")
		held[a.ns]++
		inFlight = append(inFlight, a)
	}
	total := 0
	for _, ns := range teams {
		for created[ns] < load[ns] {
			send(ns)
		}
		total += load[ns]
		waiting[ns] = load[ns] - held[ns]
	}
	pool := types.NamespacedName{Namespace: agents, Name: "shared"}.String()
	g.Eventually(func(g Gomega) {
		var s agentio.PoolStats
		for _, p := range calls.Stats() {
			if p.Agent == pool {
				s = p
			}
		}
		queued := map[string]int{}
		for _, n := range s.Namespaces {
			queued[n.Namespace] = n.Queued // the Agent's own namespace: its card reads
		}
		for _, ns := range teams {
			g.Expect(queued).To(HaveKeyWithValue(ns, waiting[ns]), "every send waits in the Agent's pool, counted by namespace")
		}
		g.Expect(s.Namespaces).To(ContainElement(agentio.NamespaceLoad{Namespace: heavy, Running: places, Queued: load[heavy] - places}))
	}, eventually, tick).Should(Succeed())

	arrived := places
	for len(inFlight) > 0 {
		close(inFlight[0].release)
		held[inFlight[0].ns]--
		inFlight = inFlight[1:]
		floor, contenders := -1, 0
		for ns, n := range waiting {
			if n == 0 {
				continue
			}
			contenders++
			if floor < 0 || held[ns] < floor {
				floor = held[ns]
			}
		}
		if contenders == 0 {
			continue
		}
		a := next()
		g.Expect(waiting[a.ns]).To(BeNumerically(">", 0), "%s sent more than it asked for", a.ns)
		g.Expect(held[a.ns]).To(Equal(floor), "a place went to %s holding %d while a namespace holding %d waited", a.ns, held[a.ns], floor)
		held[a.ns]++
		waiting[a.ns]--
		arrived++
		share := (places + contenders - 1) / contenders
		g.Expect(held[a.ns]).To(BeNumerically("<=", share), "%s holds more than its share of %d with %d namespaces waiting", a.ns, share, contenders)
		inFlight = append(inFlight, a)
	}
	g.Expect(arrived).To(Equal(total))
	g.Eventually(func(g Gomega) {
		for _, ns := range teams {
			var list v1alpha1.DelegationList
			g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			for _, d := range list.Items {
				g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), ns+"/"+d.Name)
			}
		}
	}, eventually, tick).Should(Succeed())
}
