/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/faults"
)

const (
	// quotaKills is how many times the operator is SIGKILLed during the
	// churn; two Delegations are created before each kill, and a running
	// one is cancelled before every other kill.
	quotaKills    = 10
	quotaInFlight = 3
)

// A namespace's DelegationQuota allows 3 tasks in flight; its agent's tasks
// work until cancelled. Delegations are created and cancelled while the
// operator is SIGKILLed ten times and started again each time (without
// leader election, so the next process takes over at once): the agent never
// runs more than 3 tasks at once nor any message twice, and once the churn
// ends the quota's status.used is what the API server's objects count and
// the room is used: 3 tasks run at the agent while the others wait.
func TestQuotaUsedExactAcrossOperatorKills(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	agent := faults.NewAgent(time.Hour) // its tasks work until cancelled
	t.Cleanup(agent.Close)
	w, op := killedOperatorRun(t, "quota", agent.URL())
	ns := w.ns
	g.Expect(kube.Create(ctx, &v1alpha1.DelegationQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](quotaInFlight)}}})).To(Succeed())

	ds := faults.Delegations(ns, "agent", "churn", 2*quotaKills, 5*time.Minute)
	cancelled := 0
	for kill := range quotaKills {
		for _, d := range ds[2*kill : 2*kill+2] {
			g.Expect(kube.Create(ctx, d)).To(Succeed())
		}
		if kill%2 == 1 && w.objects().CancelRunning(g) != "" {
			cancelled++
		}
		time.Sleep(300 * time.Millisecond) // sends, cancels and status writes on their way
		t.Logf("kill %d: SIGKILL with %+v", kill+1, w.objects().QuotaUse(g))
		op.kill()
	}

	live := int32(len(ds) - cancelled)
	g.Eventually(func(g Gomega) {
		counted := w.objects().QuotaUse(g)
		g.Expect(counted).To(Equal(v1alpha1.QuotaUsed{InFlight: quotaInFlight, Waiting: live - quotaInFlight}), "the room is used")
		q := &v1alpha1.DelegationQuota{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team"}, q)).To(Succeed())
		g.Expect(q.Status.Used).To(Equal(counted), "status.used is what the objects count")
		running, _ := agent.Running()
		g.Expect(running).To(Equal(quotaInFlight), "the agent runs the tasks in flight")
	}).WithTimeout(timeout).WithPolling(tick).Should(Succeed())
	_, peak := agent.Running()
	g.Expect(peak).To(BeNumerically("<=", quotaInFlight), "never more in flight than the quota")
	for name, tasks := range agent.Tasks() {
		g.Expect(tasks).To(HaveLen(1), "%s: one task", name)
	}
	g.Expect(op.log()).NotTo(ContainSubstring("panic"))
}
