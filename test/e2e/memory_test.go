/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

const (
	bulkyTasks   = 60 // per bulky Agent; two of them want up to 128 calls at once
	bulkyHold    = 3 * time.Second
	leasedTasks  = 10
	memLeaseTTL  = 9 * time.Second // renewed every 3 s
	bulkyPhase   = 25 * time.Second
	renewedAtMin = 3 // renewals of each leased task during the bulky phase
)

// Two Agents in one namespace answer every call with about 1 MiB after
// holding it for 3 s, with up to 128 of their calls wanted at once: the
// operator, run with the chart's settings (GOMEMLIMIT from its memory
// limit), holds at most its answer budget's call places in flight (48,
// of which ordinary calls take 42), stays under the chart's memory limit, and
// another namespace's leased tasks keep being renewed at their agent all
// along, none lapsing.
func TestBulkyAgentsStayWithinTheMemoryLimit(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	runID := newRunID()
	r := installChart(t, "tether-mem", "tether-e2e-mem-system-"+runID)

	deployments := &appsv1.DeploymentList{}
	g.Expect(kube.List(ctx, deployments, client.InNamespace(r.namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": r.name})).To(Succeed())
	g.Expect(deployments.Items).To(HaveLen(1))
	limit, ok := deployments.Items[0].Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	g.Expect(ok).To(BeTrue(), "the chart sets no memory limit")
	limitMiB := float64(limit.Value()) / (1 << 20)

	leasedNS, bulkyNS := "tether-e2e-mem-leased-"+runID, "tether-e2e-mem-bulky-"+runID
	newNamespace(t, leasedNS)
	newNamespace(t, bulkyNS)
	op := startOperator(t, r)
	rss := watchRSS(ctx, op.Pid())
	// The agents close after the Delegations are gone, so their cancels are
	// answered.
	steady := newRecordingAgent()
	t.Cleanup(steady.Close)
	agents := make([]*bulkyAgent, 0, 2)
	for range 2 {
		b := newBulkyAgent(bulkyHold)
		t.Cleanup(b.Close)
		agents = append(agents, b)
	}
	leased, bulky := newWorkspace(t, leasedNS), newWorkspace(t, bulkyNS)
	leased.deleteDelegationsOnCleanup()
	bulky.deleteDelegationsOnCleanup()

	leased.createAgent("steady", steady.URL())
	leased.waitAgentReady("steady")
	for i := range leasedTasks {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: leasedNS, Name: fmt.Sprintf("leased-%02d", i)},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "steady"}, Message: &v1alpha1.Message{Text: "hold"},
				Lease: &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: memLeaseTTL}}}}
		g.Expect(kube.Create(ctx, d)).To(Succeed())
	}
	tasks := map[string]string{}
	for i := range leasedTasks {
		name := fmt.Sprintf("leased-%02d", i)
		tasks[name] = leased.waitPhase(name, v1alpha1.PhaseRunning).Status.TaskID
	}

	for i, name := range []string{"bulky-a", "bulky-b"} {
		b := agents[i]
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: bulkyNS, Name: name}, Spec: v1alpha1.AgentSpec{
			URL: b.URL(), PollInterval: &metav1.Duration{Duration: 500 * time.Millisecond}, MaxConcurrentCalls: ptr.To[int32](64)}}
		g.Expect(kube.Create(ctx, a)).To(Succeed())
		bulky.waitAgentReady(name)
	}
	start := time.Now()
	t.Logf("creating %d Delegations at each of %d bulky Agents", bulkyTasks, len(agents))
	for i, b := range []string{"bulky-a", "bulky-b"} {
		for k := range bulkyTasks {
			d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: bulkyNS, Name: fmt.Sprintf("%s-%02d", b, k)},
				Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: b}, Message: &v1alpha1.Message{Text: "bulk"}}}
			g.Expect(kube.Create(ctx, d)).To(Succeed(), "agent %d", i)
		}
	}
	inFlight := func() int64 {
		var n int64
		for _, b := range agents {
			n += b.inFlight.Load()
		}
		return n
	}
	mostInFlight := int64(0)
	g.Eventually(func() int64 { mostInFlight = max(mostInFlight, inFlight()); return mostInFlight }).
		WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(BeNumerically(">=", 36),
		"the bulky agents never held most of the 42 places ordinary calls may take")
	t.Logf("the bulky agents hold %d calls at once after %s", mostInFlight, time.Since(start).Round(time.Millisecond))
	busy := time.Now()
	for time.Since(busy) < bulkyPhase {
		mostInFlight = max(mostInFlight, inFlight())
		time.Sleep(50 * time.Millisecond)
	}
	end := time.Now()
	most := rss()
	var answered int64
	for _, b := range agents {
		answered += b.answered.Load()
		mostInFlight = max(mostInFlight, b.peak.Load())
	}
	t.Logf("bulky phase of %s: %d answers of ~1 MiB, at most %d calls held at once; operator RSS at most %.1f MiB (limit %.0f MiB)",
		end.Sub(busy).Round(time.Millisecond), answered, mostInFlight, most, limitMiB)

	g.Expect(op.Exited()).To(BeFalse(), "the operator exited:\n%s", op.Log())
	g.Expect(most).To(BeNumerically("<", limitMiB), "the operator's RSS passed the chart's memory limit")
	// A call the operator gave up on (its deadline) frees its place at once;
	// the agent notices a moment later, so it may count one or two more.
	g.Expect(mostInFlight).To(BeNumerically("<=", 48+2), "more calls in flight than the answer budget's 48 call places allow")
	g.Expect(answered).To(BeNumerically(">=", 64), "the bulky agents answered too little to load the operator")

	// The other namespace's leases: renewed at the agent all along.
	for name, task := range tasks {
		var during []time.Time
		last := time.Time{}
		for _, at := range steady.renewalsOf(task) {
			if at.Before(busy) {
				last = at
				continue
			}
			if at.Before(end) {
				during = append(during, at)
			}
		}
		g.Expect(len(during)).To(BeNumerically(">=", renewedAtMin), "%s was renewed %d times in %s of bulky answers", name, len(during), bulkyPhase)
		for _, at := range during {
			if !last.IsZero() {
				g.Expect(at.Sub(last)).To(BeNumerically("<", memLeaseTTL), "%s went %s without a renewal", name, at.Sub(last))
			}
			last = at
		}
		g.Expect(end.Sub(last)).To(BeNumerically("<", memLeaseTTL), "%s was not renewed in the last %s", name, end.Sub(last))
	}
	g.Expect(steady.lapsedTasks()).To(BeEmpty(), "tasks whose lease lapsed at the agent")
	expectNoForbidden(t, op)
}
