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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/test/faults"
)

// A partition between the operator and an agent on the kit (leases
// honoured) drops every answer for longer than the lease's ttl: the calls
// still reach the agent, so its task runs on and its lease is renewed
// there, but the operator hears nothing. Under a policy that retries
// LeaseLapsed the operator cancels the task first (CancelTask reaches the
// agent during the partition), waits for the agent to confirm once the
// partition ends, and only then sends the second attempt, which succeeds:
// never two attempts alive.
func TestRetryLeaseLapsedByAPartitionIsCancelledThenRetried(t *testing.T) {
	opts := testOptions()
	opts.CancelTimeout = 20 * time.Second // the cancel outlasts the partition
	e := setupWith(t, opts)
	ka := newKitWorker(t)
	proxy := faults.NewProxy(ka.URL(), faults.Options{})
	t.Cleanup(proxy.Close)
	e.createAgent("kit", proxy.URL(), pollEvery(10*time.Second))
	e.waitAgentReady("kit")
	const ttl, partition = 3 * time.Second, 5 * time.Second
	e.create(e.kitTask("leased", "kit", "steps=8 delay=1s", withLease(ttl), func(d *v1alpha1.Delegation) {
		d.Spec.Retry = &v1alpha1.RetryPolicy{MaxAttempts: 2, On: []v1alpha1.RetryClass{"LeaseLapsed"},
			Backoff: &v1alpha1.Backoff{Initial: &metav1.Duration{Duration: 100 * time.Millisecond}}}
	}))
	var first string
	e.g.Eventually(func(g Gomega) {
		d := e.get("leased")
		g.Expect(d.Status.Lease).NotTo(BeNil())
		g.Expect(d.Status.Lease.Granted).To(BeTrue())
		g.Expect(d.Status.RemoteState).To(Equal(string(tethera2a.StateWorking)))
		first = d.Status.TaskID
	}, eventually, tick).Should(Succeed())
	proxy.Partition(faults.Lose, partition)
	partitioned := time.Now()

	d := e.waitPhase("leased", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Attempts).To(HaveLen(2), statusJSON(d))
	lapsed := d.Status.Attempts[0]
	e.g.Expect(lapsed.TaskID).To(Equal(first))
	e.g.Expect(lapsed.Outcome.Reason).To(Equal(delegation.ReasonLeaseLapsed), statusJSON(d))
	e.g.Expect(lapsed.Outcome.FailureClass).To(Equal(v1alpha1.FailureLeaseLapsed))
	e.g.Expect(d.Status.Attempts[1].Outcome.Reason).To(Equal(delegation.ReasonCompleted))
	e.g.Expect(d.Status.TaskID).NotTo(Equal(first))

	cancels := ka.Calls(func(c kitCall) bool { return c.Method == "CancelTask" && c.TaskID == first })
	sends := ka.Sends(e.ns, "leased")
	e.g.Expect(cancels).NotTo(BeEmpty(), "CancelTask never reached the agent for the lapsed attempt's task")
	e.g.Expect(sends).To(HaveLen(2), "one send per attempt")
	e.g.Expect(cancels[0].At).To(BeTemporally("<", partitioned.Add(partition)), "the cancel reached the agent during the partition")
	e.g.Expect(cancels[0].At).To(BeTemporally(">=", partitioned.Add(ttl-time.Second)), "not before the lease could have lapsed")
	e.g.Expect(sends[1].At).To(BeTemporally(">", cancels[0].At), "attempt 2 was sent after attempt 1's cancel")
	e.g.Expect(sends[1].At).To(BeTemporally(">=", partitioned.Add(partition)), "and after the agent could confirm it")
	e.g.Expect(ka.TaskState(first)).To(Equal(a2a.TaskStateCanceled), "the lapsed attempt's task ended at the agent")
	t.Logf("partition at 0; first cancel at %v, attempt 2 sent at %v, succeeded at %v",
		cancels[0].At.Sub(partitioned).Round(time.Millisecond), sends[1].At.Sub(partitioned).Round(time.Millisecond),
		time.Since(partitioned).Round(time.Millisecond))
}
