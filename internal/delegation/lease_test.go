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

func TestRecordLease(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ttl := metav1.Duration{Duration: 30 * time.Second}
	leased := v1alpha1.DelegationSpec{Lease: &v1alpha1.LeaseSpec{TTL: ttl}}
	first := metav1.NewTime(now)
	granted := &v1alpha1.LeaseStatus{TTL: &ttl, Granted: true, GrantedUntil: &first}
	refused := &v1alpha1.LeaseStatus{TTL: &ttl, Reason: "the agent did not grant a lease"}
	cases := []struct {
		name      string
		spec      v1alpha1.DelegationSpec
		lease     *v1alpha1.LeaseStatus
		expiresAt time.Time
		declared  bool
		want      *v1alpha1.LeaseStatus
	}{
		{name: "no lease asked for", expiresAt: now},
		{name: "the first grant is recorded", spec: leased, expiresAt: now, declared: true, want: granted},
		{name: "a renewal writes nothing", spec: leased, lease: granted, expiresAt: now.Add(time.Minute), declared: true, want: granted},
		{name: "a grant after none is recorded", spec: leased, lease: refused, expiresAt: now, declared: true, want: granted},
		{name: "no grant from an agent that declares leases", spec: leased, declared: true, want: refused},
		{name: "no grant from an agent whose card does not declare leases", spec: leased,
			want: &v1alpha1.LeaseStatus{TTL: &ttl, Reason: "the agent card does not declare the lease extension"}},
		{name: "a grant that is not renewed stays recorded", spec: leased, lease: granted, declared: true, want: granted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &v1alpha1.DelegationStatus{Lease: c.lease.DeepCopy()}
			RecordLease(&c.spec, st, c.expiresAt, c.declared)
			NewWithT(t).Expect(st.Lease).To(Equal(c.want))
		})
	}
}
