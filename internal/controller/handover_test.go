/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/internal/delegation"
)

// A lease shorter than a leader hand-over is warned about on the
// Delegation (condition and one Warning event); a longer one is not.
func TestLeaseTooShortForAHandOverIsWarned(t *testing.T) {
	opts := testOptions()
	opts.MinHandOverTTL = 4 * time.Second // the kit agent grants at most 5s
	e := setupWith(t, opts)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL(), pollEvery(10*time.Second))
	e.create(e.kitTask("short", "kit", "forever delay=1h", withLease(2*time.Second)))
	e.create(e.kitTask("long", "kit", "forever delay=1h", withLease(5*time.Second)))

	e.waitLeased("short")
	e.waitLeased("long")
	e.g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(e.get("short").Status.Conditions, delegation.ConditionLeaseHandOver)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(delegation.ReasonTTLBelowHandOver))
		g.Expect(c.Message).To(ContainSubstring("lease.ttl 2s is below 4s"))
	}, eventually, tick).Should(Succeed())
	e.g.Eventually(func() []string { return e.warnings("short", delegation.ReasonTTLBelowHandOver) }, eventually, tick).
		Should(ConsistOf(ContainSubstring("shortest that survives a hand-over")))
	e.g.Expect(meta.FindStatusCondition(e.get("long").Status.Conditions, delegation.ConditionLeaseHandOver)).To(BeNil())
	e.g.Expect(e.warnings("long", delegation.ReasonTTLBelowHandOver)).To(BeEmpty())
}
