/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// createQuota creates a DelegationQuota in the test's namespace.
//
// It returns once the operator has written the quota's status: the operator
// checks the quotas its cache holds, so a Delegation created before the cache
// shows the quota would start unlimited by it (as docs/tenancy.md tells
// users: apply a quota before the Delegations it should hold).
func (e *env) createQuota(name string, hard v1alpha1.QuotaLimits) {
	e.t.Helper()
	e.g.Expect(k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Spec: v1alpha1.DelegationQuotaSpec{Hard: hard}})).To(Succeed())
	e.g.Eventually(func() int64 {
		var q v1alpha1.DelegationQuota
		e.g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &q)).To(Succeed())
		return q.Status.ObservedGeneration
	}, eventually, tick).Should(BeNumerically(">=", 1), "the operator has seen the quota")
}

// updateQuota changes a quota with a merge patch: the operator writes its
// status meanwhile, so an update of what was read could conflict.
func (e *env) updateQuota(name string, change func(q *v1alpha1.DelegationQuota)) {
	e.t.Helper()
	var q v1alpha1.DelegationQuota
	e.g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &q)).To(Succeed())
	before := q.DeepCopy()
	change(&q)
	e.g.Expect(k8sClient.Patch(context.Background(), &q, client.MergeFrom(before))).To(Succeed())
}

func (e *env) quotaUsed(name string) func() v1alpha1.QuotaUsed {
	return func() v1alpha1.QuotaUsed {
		var q v1alpha1.DelegationQuota
		e.g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &q)).To(Succeed())
		return q.Status.Used
	}
}

// sentTexts are the messages the agent was sent, in order.
func (e *env) sentTexts() []string {
	calls := e.agent.Calls("SendMessage")
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.Text)
	}
	return out
}

// countedUse is status.used as counted from the API server's objects.
func (e *env) countedUse() v1alpha1.QuotaUsed { return e.objects().QuotaUse(e.g) }

// A namespace with inFlight 2 and four Delegations: two run, two wait
// Pending/QuotaExceeded with nothing sent; a settled one lets the oldest
// waiting start; status.used matches the objects, also after the operator
// was stopped and started again with nothing in memory.
func TestQuotaInFlightQueuesOldestFirstAndUsedSurvivesRestart(t *testing.T) {
	e := setup(t)
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](2)})
	e.waitAgentReady("agent")
	names := []string{"q1", "q2", "q3", "q4"}
	for _, name := range names {
		e.create(e.task(name, "wait "+name))
		time.Sleep(20 * time.Millisecond) // distinct creation order (seconds tie; then names)
	}
	e.waitRunning("q1")
	e.waitRunning("q2")
	for _, name := range names[2:] {
		d := e.waitReason(name, v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
		e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team": inFlight 2/2; waiting in creation order`))
	}
	e.g.Consistently(e.sentTexts, time.Second, tick).Should(ConsistOf("wait q1", "wait q2"), "nothing is sent over quota")
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 2, Waiting: 2}))
	metricsOut, err := testutil.CollectAndFormat(&quotaCollector{used: quotaMetrics.used, hard: quotaMetrics.hard, reader: k8sClient},
		expfmt.TypeTextPlain, "tether_quota_used", "tether_quota_hard")
	e.g.Expect(err).NotTo(HaveOccurred())
	for _, line := range []string{
		`tether_quota_used{namespace="` + e.ns + `",quota="team",resource="inFlight"} 2`,
		`tether_quota_used{namespace="` + e.ns + `",quota="team",resource="waiting"} 2`,
		`tether_quota_hard{namespace="` + e.ns + `",quota="team",resource="inFlight"} 2`,
	} {
		e.g.Expect(string(metricsOut)).To(ContainSubstring(line))
	}

	e.op.Stop()
	e.op = startOperator(t, e.ns, testOptions())
	e.g.Consistently(e.sentTexts, 2*time.Second, tick).Should(Equal([]string{"wait q1", "wait q2"}),
		"a new process lets no waiting one through")
	e.g.Expect(e.quotaUsed("team")()).To(Equal(v1alpha1.QuotaUsed{InFlight: 2, Waiting: 2}))
	e.g.Expect(e.countedUse()).To(Equal(v1alpha1.QuotaUsed{InFlight: 2, Waiting: 2}))

	e.update("q2", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitRunning("q3")
	e.g.Consistently(e.sentTexts, time.Second, tick).Should(Equal([]string{"wait q1", "wait q2", "wait q3"}), "the oldest waiting went first")
	e.g.Expect(e.get("q4").Status.Outcome.Reason).To(Equal(delegation.ReasonQuotaExceeded))
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 2, Waiting: 1}))

	// Raising the quota lets the last one start at once.
	e.updateQuota("team", func(q *v1alpha1.DelegationQuota) { q.Spec.Hard.InFlight = ptr.To[int32](3) })
	e.waitRunning("q4")
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 3}))
}

// A namespace at quota with many waiting: a settled task wakes only the
// Delegations whose turn it may be, and a change of the quota's status wakes
// none. Each one woken costs a pass and, when the count in its message moved
// ("inFlight 0/1" while the place is free), a status write; so the waiting
// ones behind the next in line are not written at all while tasks settle
// one by one, and each next one in line still starts.
func TestQuotaSettledTaskWakesOnlyTheNextInLine(t *testing.T) {
	e := setup(t)
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](1)})
	e.waitAgentReady("agent")
	names := make([]string, 30)
	for i := range names {
		names[i] = fmt.Sprintf("q%02d", i) // created in name order: the line's order within a second
		e.create(e.task(names[i], "wait "+names[i]))
		time.Sleep(20 * time.Millisecond) // each one reconciled in turn (a Delegation not yet waiting is not ahead)
	}
	e.waitRunning(names[0])
	versions := map[string]string{}
	for _, name := range names[1:] {
		versions[name] = e.waitReason(name, v1alpha1.PhasePending, delegation.ReasonQuotaExceeded).ResourceVersion
	}
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 1, Waiting: int32(len(names) - 1)}))
	for _, name := range names[1:] {
		versions[name] = e.get(name).ResourceVersion // after the last write of the first passes
	}
	const settled = 3
	for i := range settled {
		e.update(names[i], func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
		e.waitRunning(names[i+1])
	}
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 1, Waiting: int32(len(names) - 1 - settled)}))
	e.g.Consistently(func(g Gomega) {
		for _, name := range names[settled+1:] {
			g.Expect(e.get(name).ResourceVersion).To(Equal(versions[name]), "%s was written though its turn had not come", name)
		}
	}, time.Second, tick).Should(Succeed())
}

// status.used stays exact while the operator is stopped and started ten
// times as Delegations are created and cancelled, and the waiting ones take
// the room (a pass whose send marker's write conflicted once kept a place
// nothing used and was refused it on its next pass).
func TestQuotaUsedExactAcrossRestartsDuringChurn(t *testing.T) {
	e := setup(t)
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](3)})
	e.waitAgentReady("agent")
	created := 0
	for restart := range 10 {
		for range 2 {
			created++
			e.create(e.task("c"+string(rune('a'+created)), "wait"))
		}
		if restart%2 == 1 {
			e.objects().CancelRunning(e.g)
		}
		time.Sleep(300 * time.Millisecond)
		e.op.Stop()
		e.op = startOperator(t, e.ns, testOptions())
	}
	e.g.Eventually(func(g Gomega) {
		counted := e.countedUse()
		g.Expect(counted.InFlight).To(BeNumerically("<=", 3), "never more in flight than the quota")
		g.Expect(counted.InFlight + counted.Waiting).To(BeNumerically(">", 0))
		g.Expect(e.quotaUsed("team")()).To(Equal(counted))
	}, eventually, tick).Should(Succeed())
	// After the last restart the waiting ones take the room as the new
	// operator's passes reach them.
	e.g.Eventually(func() int32 { return e.countedUse().InFlight }, eventually, tick).Should(Equal(int32(3)), "the room is used")
}

// A Delegation too deep for the quota never holds up a younger one under
// inFlight: it waits OverQuotaLimit and holds no place in the queue (as
// QuotaExceeded it was first in line, and with one free place nothing
// younger of the namespace could start).
func TestQuotaTooDeepHoldsNoPlaceInLine(t *testing.T) {
	e := setup(t)
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](2), Depth: ptr.To[int32](0)})
	e.waitAgentReady("agent")
	e.create(e.task("root", "wait root"))
	e.waitRunning("root")
	e.create(e.task("deep", "wait deep", func(d *v1alpha1.Delegation) { d.Spec.ParentRef = &v1alpha1.LocalRef{Name: "root"} }))
	e.waitReason("deep", v1alpha1.PhasePending, delegation.ReasonOverQuotaLimit)
	e.create(e.task("younger", "wait younger"))
	e.waitRunning("younger")
	e.g.Expect(e.sentTexts()).NotTo(ContainElement("wait deep"))
}

// depth and childrenPerParent: a Delegation too deep waits
// Pending/OverQuotaLimit, a parent's child past the limit
// Pending/ChildrenPerParentExceeded, and neither is sent; deleting a started
// child lets the next one start.
func TestQuotaDepthAndChildrenPerParent(t *testing.T) {
	e := setup(t)
	e.createQuota("tree", v1alpha1.QuotaLimits{Depth: ptr.To[int32](1), ChildrenPerParent: ptr.To[int32](2)})
	e.waitAgentReady("agent")
	child := func(parent string) func(*v1alpha1.Delegation) {
		return func(d *v1alpha1.Delegation) { d.Spec.ParentRef = &v1alpha1.LocalRef{Name: parent} }
	}
	e.create(e.task("root", "wait root"))
	e.waitRunning("root")
	for _, name := range []string{"k1", "k2", "k3"} {
		e.create(e.task(name, "wait "+name, child("root")))
		time.Sleep(20 * time.Millisecond)
	}
	e.waitRunning("k1")
	e.waitRunning("k2")
	d := e.waitReason("k3", v1alpha1.PhasePending, delegation.ReasonChildrenPerParentExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(
		`DelegationQuota "tree": childrenPerParent 2/2; waiting in creation order for a started sibling to be deleted`))

	e.create(e.task("deep", "wait deep", child("k1")))
	d = e.waitReason("deep", v1alpha1.PhasePending, delegation.ReasonOverQuotaLimit)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "tree": depth 2 exceeds 1; it cannot start under this quota`))
	e.g.Consistently(func() bool {
		return slices.ContainsFunc(e.sentTexts(), func(s string) bool { return s == "wait k3" || s == "wait deep" })
	}, time.Second, tick).Should(BeFalse(), "nothing is sent over quota")
	e.g.Expect(e.get("deep").Status.Phase).To(Equal(v1alpha1.PhasePending), "never Failed")

	e.update("k2", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("k2", v1alpha1.PhaseCanceled)
	e.g.Consistently(func() string { return e.get("k3").Status.Outcome.Reason }, time.Second, tick).
		Should(Equal(delegation.ReasonChildrenPerParentExceeded), "a settled child still counts while it exists")
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("k2"))).To(Succeed())
	e.waitRunning("k3")
	e.g.Expect(e.get("deep").Status.Outcome.Reason).To(Equal(delegation.ReasonOverQuotaLimit))

	// Deleting the quota wakes what waited for it.
	e.g.Expect(k8sClient.Delete(context.Background(), &v1alpha1.DelegationQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "tree"}})).To(Succeed())
	e.waitRunning("deep")
}

// Bad quotas are refused by the API server.
func TestQuotaAdmission(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	for name, c := range map[string]struct {
		hard v1alpha1.QuotaLimits
		msg  string
	}{
		"empty":    {v1alpha1.QuotaLimits{}, "spec.hard: Invalid value"},
		"negative": {v1alpha1.QuotaLimits{InFlight: ptr.To[int32](-1)}, "spec.hard.inFlight: Invalid value: -1"},
		"too deep": {v1alpha1.QuotaLimits{Depth: ptr.To[int32](65)}, "spec.hard.depth: Invalid value: 65"},
	} {
		err := k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DelegationQuotaSpec{Hard: c.hard}})
		g.Expect(err).To(HaveOccurred(), name)
		g.Expect(err.Error()).To(ContainSubstring(c.msg), name)
	}
	g.Expect(k8sClient.Create(context.Background(), &v1alpha1.DelegationQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
		Spec: v1alpha1.DelegationQuotaSpec{Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](0)}}})).To(Succeed())
}

// One namespace at its quota holds only its own Delegations: another
// namespace served by the same operator and agent sends at once.
func TestQuotaHoldsOnlyItsNamespace(t *testing.T) {
	t.Parallel()
	agent := newTestAgent()
	t.Cleanup(agent.Close)
	teamA := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: agent}
	teamB := &env{t: t, g: teamA.g, ns: newNamespace(t), agent: agent}
	startOperatorIn(t, cfg, []string{teamA.ns, teamB.ns}, testOptions(), nil)
	for _, e := range []*env{teamA, teamB} {
		e.createAgent("agent", agent.URL())
		e.waitAgentReady("agent")
	}
	teamA.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](1)})
	teamA.create(teamA.task("a1", "wait a1"))
	teamA.waitRunning("a1")
	teamA.create(teamA.task("a2", "wait a2"))
	teamA.waitReason("a2", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	for _, name := range []string{"b1", "b2", "b3"} {
		teamB.create(teamB.task(name, "wait "+name))
	}
	for _, name := range []string{"b1", "b2", "b3"} {
		teamB.waitRunning(name)
	}
	teamA.g.Expect(teamA.get("a2").Status.Outcome.Reason).To(Equal(delegation.ReasonQuotaExceeded))
	teamA.g.Expect(teamA.sentTexts()).NotTo(ContainElement("wait a2"))
}

// A Delegation the quota lets through that then waits for its Agent's
// maxConcurrentTasks holds no place under the quota: another takes the
// room, and once the Agent has room it asks the quota again and starts.
func TestQuotaPlaceGivenBackWhileWaitingForTheAgent(t *testing.T) {
	e := setup(t)
	capped := e.cappedAgentUnderQuota()
	e.create(e.task("c1", "wait c1", capped))
	e.waitRunning("c1")
	e.create(e.task("c2", "wait c2", capped))
	e.waitReason("c2", v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity)
	e.create(e.task("other", "wait other"))
	e.waitRunning("other")
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 2}))

	e.update("c1", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitRunning("c2")
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 2}))
}

// conflictOnce answers the first write of a send marker with a conflict, as
// the API server does when the cache the pass read was behind.
type conflictOnce struct {
	client.Client
	injected atomic.Int32
}

func (c *conflictOnce) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if d, ok := obj.(*v1alpha1.Delegation); ok && d.Annotations[v1alpha1.AnnotationSendStarted] != "" && c.injected.CompareAndSwap(0, 1) {
		return apierrors.NewConflict(v1alpha1.SchemeGroupVersion.WithResource("delegations").GroupResource(), d.Name, errors.New("injected"))
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A Delegation let through whose send marker's write conflicts asks again
// on its next pass and starts: the place it was let through for is its own
// (it was refused it, and waited QuotaExceeded for good, its place held by
// nothing).
func TestQuotaPassWhoseMarkerConflictedStartsOnTheNext(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgent()}
	t.Cleanup(e.agent.Close)
	conflicts := &conflictOnce{}
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		conflicts.Client = r.Client
		r.Client = conflicts
	})
	e.createAgent("agent", e.agent.URL())
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](1)})
	e.waitAgentReady("agent")
	e.create(e.task("q1", "wait q1"))
	e.waitRunning("q1")
	e.g.Expect(conflicts.injected.Load()).To(Equal(int32(1)), "its first send marker conflicted")
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 1}))
}

// cappedAgentUnderQuota makes an Agent "capped" of one task at a time and a
// quota of two in flight, and returns what sends a Delegation to "capped".
func (e *env) cappedAgentUnderQuota() func(*v1alpha1.Delegation) {
	e.t.Helper()
	e.createAgent("capped", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.MaxConcurrentTasks = ptr.To[int32](1) })
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](2)})
	e.waitAgentReady("capped")
	e.waitAgentReady("agent")
	return func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Name = "capped" }
}
