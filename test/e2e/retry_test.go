/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/test/faults"
)

const (
	// retryKills is how many times the operator is SIGKILLed while the
	// Delegations wait for their next attempt.
	retryKills = 10
	// retryBackoff is the wait before each retry: long enough for several
	// kills and restarts to land inside it.
	retryBackoff = 8 * time.Second
	retryTasks   = 3
	// retryAttempts is each Delegation's maxAttempts: the agent fails all
	// but the last.
	retryAttempts = 6
	// killsPerBackoff spreads the kills over the backoffs.
	killsPerBackoff = 3
)

// The agent fails the first five tasks of each context (Transient);
// three Delegations retry with maxAttempts 6 and an 8 s backoff. The
// operator is SIGKILLed ten times (at most three per backoff) while all of
// them wait in a backoff, and
// started again each time (without leader election, so the next process
// takes over at once): every Delegation succeeds with exactly one task per
// attempt at the agent, each with its own message id.
func TestRetryBackoffSurvivesOperatorKills(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	agent := faults.NewFailingAgent(100*time.Millisecond, retryAttempts-1)
	t.Cleanup(agent.Close)
	w, op := killedOperatorRun(t, "retry", agent.URL())
	ns := w.ns

	ds := faults.Delegations(ns, "agent", "retry", retryTasks, 5*time.Minute)
	for _, d := range ds {
		d.Spec.Retry = &v1alpha1.RetryPolicy{MaxAttempts: retryAttempts, On: []v1alpha1.RetryClass{"Transient"},
			Backoff: &v1alpha1.Backoff{Initial: &metav1.Duration{Duration: retryBackoff}, Factor: ptr.To[int32](1)}}
		g.Expect(kube.Create(ctx, d)).To(Succeed())
	}

	// inBackoff: every Delegation waits for its next attempt (no task of
	// the current attempt exists yet), and which attempt each waits for.
	inBackoff := func() (map[string]int32, bool) {
		list := &v1alpha1.DelegationList{}
		if err := kube.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) != retryTasks {
			return nil, false
		}
		next := map[string]int32{}
		for _, d := range list.Items {
			o := d.Status.Outcome
			if o == nil || o.Reason != delegation.ReasonRetryScheduled || d.Status.TaskID != "" || d.Status.SendStarted != nil {
				return nil, false
			}
			next[d.Name] = d.Status.Attempt
		}
		return next, true
	}
	killsIn := map[int32]int{} // the attempt waited for → kills during its backoff
	for kill := 1; kill <= retryKills; kill++ {
		var waiting map[string]int32
		g.Eventually(func() bool {
			var ok bool
			waiting, ok = inBackoff()
			return ok && killsIn[slices.Min(slices.Collect(maps.Values(waiting)))] < killsPerBackoff
		}).WithTimeout(2*retryBackoff).WithPolling(50*time.Millisecond).Should(BeTrue(), "the Delegations never all waited in a backoff")
		killsIn[slices.Min(slices.Collect(maps.Values(waiting)))]++
		t.Logf("kill %d: SIGKILL while waiting for attempts %v", kill, waiting)
		op.kill()
		time.Sleep(500 * time.Millisecond) // the new process reconciles what it found
	}

	for _, d := range ds {
		got := w.waitPhase(d.Name, v1alpha1.PhaseSucceeded)
		uid := string(got.UID)
		tasks := agent.Tasks()[d.Name]
		ids := make([]string, 0, len(tasks))
		for _, task := range tasks {
			ids = append(ids, task.MessageID)
		}
		want := []string{"tether-" + uid}
		for n := 2; n <= retryAttempts; n++ {
			want = append(want, fmt.Sprintf("tether-%s-%d", uid, n))
		}
		g.Expect(ids).To(Equal(want), "%s: one task per attempt, each with its own message id", d.Name)
		g.Expect(got.Status.Attempts).To(HaveLen(retryAttempts))
		g.Expect(got.Status.Attempt).To(Equal(int32(retryAttempts)))
	}
	g.Consistently(func() int {
		n := 0
		for _, ts := range agent.Tasks() {
			n += len(ts)
		}
		return n
	}).WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).Should(Equal(retryAttempts*retryTasks), "no task after the last attempt")
	g.Expect(op.log()).NotTo(ContainSubstring("panic"))
}
