/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestSetLeaseHandOver(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	leased := func(ttl time.Duration, phase v1alpha1.Phase) *v1alpha1.Delegation {
		d := &v1alpha1.Delegation{}
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: ttl}}
		d.Status.Phase = phase
		return d
	}
	for _, tc := range []struct {
		name   string
		d      *v1alpha1.Delegation
		minTTL time.Duration
		want   bool
	}{
		{"below the hand-over", leased(10*time.Second, v1alpha1.PhaseRunning), 14 * time.Second, true},
		{"at the hand-over", leased(14*time.Second, v1alpha1.PhaseRunning), 14 * time.Second, false},
		{"no leader election", leased(10*time.Second, v1alpha1.PhaseRunning), 0, false},
		{"no lease", &v1alpha1.Delegation{}, 14 * time.Second, false},
		{"settled", leased(10*time.Second, v1alpha1.PhaseSucceeded), 14 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SetLeaseHandOver(tc.d, tc.minTTL, now)).To(Equal(tc.want))
			c := meta.FindStatusCondition(tc.d.Status.Conditions, ConditionLeaseHandOver)
			if !tc.want {
				g.Expect(c).To(BeNil())
				return
			}
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(ReasonTTLBelowHandOver))
			g.Expect(c.Message).To(ContainSubstring("lease.ttl 10s is below 14s"))
		})
	}
	// A ttl raised later clears the warning.
	g := NewWithT(t)
	d := leased(10*time.Second, v1alpha1.PhaseRunning)
	g.Expect(SetLeaseHandOver(d, 14*time.Second, now)).To(BeTrue())
	d.Spec.Lease.TTL.Duration = 30 * time.Second
	g.Expect(SetLeaseHandOver(d, 14*time.Second, now)).To(BeFalse())
	g.Expect(d.Status.Conditions).To(BeEmpty())
}
