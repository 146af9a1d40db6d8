/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// These pin only the shape of what Delegate writes and how it reads a status;
// the operator's tests run it against a real control plane.

// orchUID is the UID of Delegation team/orch, the parent every test's task
// was sent for; fakeClient always holds it.
const orchUID = "0b7e-orch-uid"

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	NewWithT(t).Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	orch := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orch", UID: orchUID},
		Status: v1alpha1.DelegationStatus{TaskID: "orch-task"}}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.Delegation{}).
		WithObjects(append(objs, orch)...).Build()
}

// inTask is the context an executor gets for a task the operator sent for
// Delegation team/orch: its first message id derives from orch's UID.
func inTask(b *Budget) context.Context {
	ctx := withDelegation(context.Background(), claim{key: types.NamespacedName{Namespace: ns, Name: "orch"},
		messageID: delegation.MessageID(orchUID, -1), taskID: "a-new-task"})
	return withBudget(ctx, b)
}

func TestDelegateCreatesTheChildAndHoldsItsGrant(t *testing.T) {
	g := NewWithT(t)
	c := fakeClient(t)
	b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})
	ctx := inTask(b)
	req := DelegateRequest{
		Key: "part-1", Agent: workerAgent, Skill: "sum", Text: "add it up",
		Budget: map[string]int64{tokens: 40}, Timeout: time.Minute, Lease: 30 * time.Second,
	}

	key, err := DelegateAsync(ctx, c, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key).To(Equal(client.ObjectKey{Namespace: ns, Name: "orch-part-1"}))

	child := &v1alpha1.Delegation{}
	g.Expect(c.Get(ctx, key, child)).To(Succeed())
	g.Expect(child.Spec).To(Equal(v1alpha1.DelegationSpec{
		AgentRef:  &v1alpha1.LocalRef{Name: workerAgent},
		Skill:     "sum",
		ParentRef: &v1alpha1.LocalRef{Name: "orch"},
		Message:   &v1alpha1.Message{Text: "add it up"},
		Budget:    &v1alpha1.BudgetSpec{Meters: map[string]int64{tokens: 40}},
		Timeout:   &metav1.Duration{Duration: time.Minute},
		Lease:     &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}},
	}))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 60}))

	again, err := DelegateAsync(ctx, c, req)
	g.Expect(err).NotTo(HaveOccurred(), "a retry finds the child")
	g.Expect(again).To(Equal(key))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 60}), "and holds nothing more")

	tooMuch := DelegateRequest{Key: "part-2", Agent: workerAgent, Text: "x", Budget: map[string]int64{tokens: 61}}
	_, err = DelegateAsync(ctx, c, tooMuch)
	g.Expect(err).To(MatchError(ErrBudgetExhausted), "an agent cannot grant more than it has left")
	list := &v1alpha1.DelegationList{}
	g.Expect(c.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "orch and its one child")
}

func TestDelegateRefusesOutsideADelegationAndForeignChildren(t *testing.T) {
	g := NewWithT(t)
	foreign := &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: childA},
		Spec:       v1alpha1.DelegationSpec{ParentRef: &v1alpha1.LocalRef{Name: "someone-else"}},
	}
	c := fakeClient(t, foreign)

	_, err := DelegateAsync(context.Background(), c, DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"})
	g.Expect(err).To(MatchError(ContainSubstring("did not come from a Delegation")))

	_, err = DelegateAsync(inTask(nil), c, DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"})
	g.Expect(err).To(MatchError(ContainSubstring("another parent")))
}

func TestDelegateWaitsForTheChildToSettle(t *testing.T) {
	g := NewWithT(t)
	c := fakeClient(t)
	b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})
	ctx := inTask(b)

	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x", Budget: map[string]int64{tokens: 40}}
		o, err := Delegate(ctx, c, req)
		done <- result{o, err}
	}()

	child := &v1alpha1.Delegation{}
	key := client.ObjectKey{Namespace: ns, Name: childA}
	g.Eventually(func() error { return c.Get(ctx, key, child) }).Should(Succeed())
	child.Status.Phase = v1alpha1.PhaseRunning
	g.Expect(c.Status().Update(ctx, child)).To(Succeed())
	g.Consistently(done).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "Running is not settled")

	child.Status.Phase = v1alpha1.PhaseSucceeded
	child.Status.Outcome = &v1alpha1.Outcome{Reason: "Completed"}
	child.Status.Result = &v1alpha1.Result{Text: "42"}
	// As the operator writes it: the agent reported 15 of a 40 grant.
	child.Status.Budget = &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{tokens: 40}, Reported: v1alpha1.Meters{tokens: 15},
		Spent: v1alpha1.Meters{tokens: 15}}
	g.Expect(c.Status().Update(ctx, child)).To(Succeed())

	var r result
	g.Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(r.o).To(Equal(&Outcome{
		Name: childA, Phase: v1alpha1.PhaseSucceeded, Reason: "Completed", Text: "42",
		Spent: map[string]int64{tokens: 15},
	}))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 85}), "the child's report replaces its hold")

	again, err := Wait(ctx, c, key)
	g.Expect(err).NotTo(HaveOccurred(), "waiting again by name works")
	g.Expect(again.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 85}), "and settles once")
}

// A task that names a Delegation which did not send it creates nothing: not
// in another namespace, not under another parent of its own namespace.
func TestDelegateRefusesAClaimItCannotProve(t *testing.T) {
	g := NewWithT(t)
	other := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "root", UID: "victim-uid"}}
	c := fakeClient(t, other)
	req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"}
	for name, cl := range map[string]claim{
		"another namespace, our own message id": {key: types.NamespacedName{Namespace: "victim", Name: "root"},
			messageID: delegation.MessageID(orchUID, -1), taskID: "orch-task"},
		"a forged message id of the wrong shape": {key: types.NamespacedName{Namespace: "victim", Name: "root"}, messageID: "victim-uid"},
		"a reply id of the claimed Delegation":   {key: types.NamespacedName{Namespace: "victim", Name: "root"}, messageID: delegation.MessageID("victim-uid", 0)},
		"no ids at all":                          {key: types.NamespacedName{Namespace: ns, Name: "orch"}},
		"a Delegation that does not exist":       {key: types.NamespacedName{Namespace: "victim", Name: "missing"}, messageID: delegation.MessageID("", -1)},
	} {
		_, err := DelegateAsync(withDelegation(context.Background(), cl), c, req)
		g.Expect(err).To(HaveOccurred(), name)
		if name != "a Delegation that does not exist" {
			g.Expect(err).To(MatchError(ErrClaimNotProven), name)
		}
	}
	list := &v1alpha1.DelegationList{}
	g.Expect(c.List(context.Background(), list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "only orch and the victim's root: nothing was created")

	// The task id recorded in the named Delegation's status proves it too
	// (a task adopted by taskID was not started by the operator's message).
	byTask := claim{key: types.NamespacedName{Namespace: ns, Name: "orch"}, messageID: "someone-elses", taskID: "orch-task"}
	_, err := DelegateAsync(withDelegation(context.Background(), byTask), c, req)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestChildNamesAreValidAndDistinct(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ChildName("orch", "Part 1/3")).To(Equal("orch-part-1-3"))

	long := strings.Repeat("p", 60)
	a, b := ChildName(long, "worker-1"), ChildName(long, "worker-2")
	g.Expect(len(a)).To(BeNumerically("<=", 63))
	g.Expect(a).NotTo(Equal(b))
	g.Expect(ChildName(long, "worker-1")).To(Equal(a), "deterministic")
}
