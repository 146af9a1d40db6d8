/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestNewSendTerms(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 300_000_000, time.UTC)
	terms := NewSendTerms(now, 30*time.Second)
	g.Expect(terms.LeaveBy).To(Equal(now.Add(SendLeaveWindow)))
	g.Expect(terms.Deadline).To(Equal(time.Date(2026, 12, 3, 10, 1, 31, 0, time.UTC)),
		"the deadline is rounded up to the second it is recorded in, never down")
	whole := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	g.Expect(NewSendTerms(whole, 30*time.Second).Deadline).To(Equal(whole.Add(SendLeaveWindow + 30*time.Second)))
}

func TestLookUpProvesAfter(t *testing.T) {
	marker := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	deadline := metav1.NewTime(marker.Add(90 * time.Second))
	cases := []struct {
		name string
		st   v1alpha1.DelegationStatus
		want time.Time
	}{
		{"no send recorded", v1alpha1.DelegationStatus{}, time.Time{}},
		{"the recorded deadline, plus the listing lag", v1alpha1.DelegationStatus{SendStarted: &marker, SendDeadline: &deadline},
			deadline.Add(ListingLag)},
		{"a marker of an earlier build: the longest send it could have made", v1alpha1.DelegationStatus{SendStarted: &marker},
			marker.Add(SendLeaveWindow + 30*time.Second + ListingLag)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(LookUpProvesAfter(&tc.st, 30*time.Second)).To(Equal(tc.want))
		})
	}
}
