/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func (e *env) gone(name string) bool {
	err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &v1alpha1.Delegation{})
	return apierrors.IsNotFound(err)
}

// Children deleted by ttlSecondsAfterFinished as soon as they settle: the
// group keeps their outcomes, so a failed child that is gone still fails
// the group, and a group whose children are all gone still settles.
func TestGroupKeepsTheOutcomesOfChildrenDeletedAfterFinishing(t *testing.T) {
	e := setup(t)
	e.create(e.group("batch", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("batch", v1alpha1.PhaseRunning)
	ttl := func(d *v1alpha1.Delegation) { d.Spec.TTLSecondsAfterFinished = ptr.To[int32](0) }
	e.create(e.task("good", "slow", childOf("batch"), withBudget(v1alpha1.Meters{tokens: 30}), ttl))
	e.create(e.task("bad", "fail", childOf("batch"), withBudget(v1alpha1.Meters{tokens: 30}), ttl))

	e.g.Eventually(func() bool { return e.gone("good") && e.gone("bad") }, eventually, tick).Should(BeTrue())
	d := e.waitReason("batch", v1alpha1.PhaseFailed, delegation.ReasonChildFailed)
	e.g.Expect(d.Status.Outcome.Message).To(Equal("1 of 2 children failed"))
	e.g.Expect(d.Status.Children).To(Equal(&v1alpha1.ChildCounts{Succeeded: 1, Failed: 1}))
	e.g.Expect(d.Status.SettledChildren).To(HaveLen(2))
	b := ledger(d)
	e.g.Expect(b.Reservations).To(BeEmpty())
	e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 60}), "both children kept their reservations (no spend report)")
	e.g.Consistently(func() v1alpha1.Phase { return e.get("batch").Status.Phase }, time.Second, tick).Should(Equal(v1alpha1.PhaseFailed))
}

// A child applied while a parent of the same name is still being deleted
// never ran under it: it waits, is not cancelled, and runs under the parent
// that replaces it, which it gets an ownerReference to.
func TestChildWaitsWhileItsParentIsReplaced(t *testing.T) {
	e := setup(t)
	const hold = "test.tether.dev/hold"
	old := e.group("parent", nil)
	old.Finalizers = []string{hold}
	e.create(old)
	oldUID := e.waitPhase("parent", v1alpha1.PhaseRunning).UID
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("parent"))).To(Succeed())
	e.g.Eventually(func() bool { return e.get("parent").DeletionTimestamp != nil }, eventually, tick).Should(BeTrue())

	e.create(e.task("child", "echo", childOf("parent")))
	e.g.Eventually(func() string {
		d := e.get("child")
		if d.Status.Outcome == nil {
			return ""
		}
		return d.Status.Outcome.Reason
	}, eventually, tick).Should(Equal(delegation.ReasonWaitingParent))
	e.g.Consistently(func(g Gomega) {
		d := e.get("child")
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(metav1.GetControllerOf(d)).To(BeNil(), "never owned by the parent being deleted")
	}, time.Second, tick).Should(Succeed())
	e.g.Expect(e.agent.Calls("SendMessage")).To(BeEmpty())

	e.objects().Update(e.g, "parent", func(d *v1alpha1.Delegation) { controllerutil.RemoveFinalizer(d, hold) })
	e.g.Eventually(func() bool { return e.gone("parent") }, eventually, tick).Should(BeTrue())
	e.create(e.group("parent", nil))

	child := e.waitPhase("child", v1alpha1.PhaseSucceeded)
	owner := metav1.GetControllerOf(child)
	e.g.Expect(owner).NotTo(BeNil())
	newParent := e.waitPhase("parent", v1alpha1.PhaseSucceeded)
	e.g.Expect(owner.UID).To(Equal(newParent.UID))
	e.g.Expect(owner.UID).NotTo(Equal(oldUID))
}
