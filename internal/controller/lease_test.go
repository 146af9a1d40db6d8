/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Leases on both sides of the wire: the operator renews at ttl/3 from
// memory, an agentkit agent cancels what is no longer renewed.

// waitLeased waits until the agent granted the lease and the task reached
// its first step, after which nothing a user can see changes.
func (e *env) waitLeased(name string) *v1alpha1.Delegation {
	e.t.Helper()
	var d *v1alpha1.Delegation
	e.g.Eventually(func(g Gomega) {
		d = e.get(name)
		g.Expect(d.Status.Lease).NotTo(BeNil())
		g.Expect(d.Status.Lease.Granted).To(BeTrue())
		g.Expect(d.Status.RemoteState).To(Equal(string(tethera2a.StateWorking)))
		g.Expect(d.Status.Outcome.Message).To(Equal("step 1"))
	}, eventually, tick).Should(Succeed())
	return d
}

func TestLeaseRenewalsReachTheAgentWithoutAPIServerWrites(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	// Polling alone would come every 10s: only the lease drives the reads.
	e.createAgent("kit", ka.URL(), pollEvery(10*time.Second))
	e.create(e.kitTask("leased", "kit", "forever delay=1h", withLease(3*time.Second)))

	d := e.waitLeased("leased")
	id, rv := d.Status.TaskID, d.ResourceVersion
	e.g.Expect(d.Status.Lease.TTL.Duration).To(Equal(3 * time.Second))
	e.g.Expect(d.Status.Lease.GrantedUntil).NotTo(BeNil())

	start := time.Now()
	time.Sleep(3500 * time.Millisecond)
	end := time.Now()
	var window []kitCall
	for _, c := range ka.Renewals(id) {
		if !c.At.Before(start) && c.At.Before(end) {
			window = append(window, c)
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(window); i++ {
		gaps = append(gaps, window[i].At.Sub(window[i-1].At).Round(time.Millisecond))
	}
	t.Logf("lease renewals in %v: %d, %v apart", end.Sub(start).Round(time.Millisecond), len(window), gaps)
	e.g.Expect(len(window)).To(BeNumerically(">=", 3), "a 3s lease is renewed every 1s")
	e.g.Expect(e.get("leased").ResourceVersion).To(Equal(rv), "renewals write nothing to the API server")
	e.g.Expect(ka.TaskState(id)).To(Equal(a2a.TaskStateWorking), "the renewed task lives past its first TTL")
}

func TestLeaseLapsesAndTheAgentCancelsWhenTheOperatorStops(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL(), pollEvery(10*time.Second))
	const ttl = 2 * time.Second
	e.create(e.kitTask("leased", "kit", "forever delay=1h", withLease(ttl)))
	id := e.waitLeased("leased").Status.TaskID
	// The first renewal is due ttl/3 after the send.
	e.g.Eventually(func() []kitCall { return ka.Renewals(id) }, eventually, tick).ShouldNot(BeEmpty())

	e.op.Stop()
	stopped := time.Now()
	renewals := ka.Renewals(id)
	last := renewals[len(renewals)-1].At

	// The lease runs out at most one TTL after the last renewal; the sweeper
	// then cancels the task.
	e.g.Eventually(func() a2a.TaskState { return ka.TaskState(id) }, ttl+kitSweep+4*time.Second, 50*time.Millisecond).
		Should(Equal(a2a.TaskStateCanceled))
	canceled := time.Now()
	t.Logf("canceled %v after the operator stopped, %v after the last renewal",
		canceled.Sub(stopped).Round(time.Millisecond), canceled.Sub(last).Round(time.Millisecond))
	e.g.Expect(canceled.Sub(last)).To(BeNumerically(">=", ttl-50*time.Millisecond), "not before the lease ran out")

	task, err := ka.Task(id)
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(messageText(task.Status.Message)).To(ContainSubstring("lease expired"))
	e.g.Expect(ka.Renewals(id)).To(HaveLen(len(renewals)), "nothing renewed it after the stop")
}

func TestLeaseNotGrantedByAPlainAgent(t *testing.T) {
	e := setup(t)
	e.create(e.task("plain", "hello", withLease(3*time.Second)))
	d := e.waitPhase("plain", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Lease).NotTo(BeNil())
	e.g.Expect(d.Status.Lease.Granted).To(BeFalse())
	e.g.Expect(d.Status.Lease.Reason).To(ContainSubstring("does not declare the lease extension"))
	e.g.Expect(d.Status.Lease.GrantedUntil).To(BeNil())
	e.g.Expect(d.Status.Result.Text).To(Equal("echo: hello"))
}

func TestDetachStopsLeaseRenewals(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL(), pollEvery(10*time.Second))
	const ttl = 2 * time.Second
	e.create(e.kitTask("leased", "kit", "forever delay=1h", withLease(ttl)))
	id := e.waitLeased("leased").Status.TaskID
	e.g.Eventually(func() int { return len(ka.Renewals(id)) }, eventually, tick).Should(BeNumerically(">=", 1))

	e.update("leased", func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
	d := e.waitPhase("leased", v1alpha1.PhaseDetached)
	e.g.Expect(d.Status.TaskID).To(Equal(id))
	renewed := len(ka.Renewals(id))

	// Three renewal intervals and more pass without one.
	e.g.Consistently(func() int { return len(ka.Renewals(id)) }, ttl+time.Second, tick).Should(Equal(renewed))
	// So the lease lapses and the agent stops the task; the operator never cancelled it.
	e.g.Eventually(func() a2a.TaskState { return ka.TaskState(id) }, eventually, tick).Should(Equal(a2a.TaskStateCanceled))
	e.g.Expect(ka.Cancelled(id)).To(BeFalse())
	e.g.Expect(e.get("leased").Status.Phase).To(Equal(v1alpha1.PhaseDetached))
}
