/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// holdAgentCheck holds, once armed, the first check of an Agent's
// maxConcurrentTasks (its list of the Agent's Delegations across
// namespaces) until release is closed: the pass that makes it holds the
// quota place it was let through for meanwhile.
type holdAgentCheck struct {
	client.Client
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (c *holdAgentCheck) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1alpha1.DelegationList); ok && agentCheck(opts) && c.armed.CompareAndSwap(true, false) {
		close(c.held)
		<-c.release
	}
	return c.Client.List(ctx, list, opts...)
}

// agentCheck: the list of admit (by Agent, in every namespace, with no
// namespace option); the event handlers' lists name the namespace "".
func agentCheck(opts []client.ListOption) bool {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.FieldSelector == nil {
		return false
	}
	_, byAgent := lo.FieldSelector.RequiresExactMatch(indexAgent)
	for _, o := range opts {
		if _, ok := o.(client.InNamespace); ok {
			return false
		}
	}
	return byAgent
}

// A pass that lets a Delegation through the quota, which then waits for its
// Agent's maxConcurrentTasks, gives the place back and wakes the next in
// line: one refused the place while that pass held it starts at once, not
// at the next settle of the namespace.
func TestQuotaPlaceGivenBackWakesTheNextInLine(t *testing.T) {
	hold := &holdAgentCheck{held: make(chan struct{}), release: make(chan struct{})}
	e := setupWithReconciler(t, testOptions(), func(r *DelegationReconciler) {
		hold.Client = r.Client
		r.Client = hold
	})
	capped := e.cappedAgentUnderQuota()
	e.create(e.task("running", "wait running", capped))
	e.waitRunning("running")

	hold.armed.Store(true)
	e.create(e.task("let-through", "wait let-through", capped))
	e.g.Eventually(hold.held, eventually, tick).Should(BeClosed(), "the quota let it through; its Agent's check is held")
	e.create(e.task("next", "wait next"))
	d := e.waitReason("next", v1alpha1.PhasePending, delegation.ReasonQuotaExceeded)
	e.g.Expect(d.Status.Outcome.Message).To(Equal(`DelegationQuota "team": inFlight 2/2; waiting in creation order`))
	close(hold.release)

	e.waitReason("let-through", v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity)
	e.waitRunning("next")
	e.g.Expect(e.sentTexts()).To(ConsistOf("wait running", "wait next"))
}

// A child its siblings hold under childrenPerParent never holds up a younger
// Delegation under inFlight: it waits ChildrenPerParentExceeded, in its
// siblings' line only (as QuotaExceeded it stood in the namespace's line,
// and with one free place nothing younger of the namespace could start for
// as long as its started siblings existed).
func TestQuotaChildHeldBySiblingsHoldsNoPlaceInLine(t *testing.T) {
	e := setup(t)
	e.createQuota("team", v1alpha1.QuotaLimits{InFlight: ptr.To[int32](3), ChildrenPerParent: ptr.To[int32](1)})
	e.waitAgentReady("agent")
	e.create(e.task("root", "wait root"))
	e.waitRunning("root")
	e.create(e.task("k1", "wait k1", childOf("root")))
	e.waitRunning("k1")
	e.create(e.task("k2", "wait k2", childOf("root")))
	e.g.Eventually(func() string {
		if o := e.get("k2").Status.Outcome; o != nil {
			return o.Message
		}
		return ""
	}, eventually, tick).Should(ContainSubstring("childrenPerParent 1/1"))
	e.create(e.task("younger", "wait younger"))
	e.waitRunning("younger")
	d := e.get("k2")
	e.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonChildrenPerParentExceeded))
	e.g.Expect(e.sentTexts()).NotTo(ContainElement("wait k2"))
	e.g.Eventually(e.quotaUsed("team"), eventually, tick).Should(Equal(v1alpha1.QuotaUsed{InFlight: 3, Waiting: 1}))

	// A started sibling deleted lets it start.
	e.update("k1", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("k1", v1alpha1.PhaseCanceled)
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("k1"))).To(Succeed())
	e.waitRunning("k2")
}
