/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// RecordLease records what a task read back says of the lease asked for
// (expiresAt: the agent's grant, zero when it granted none; declared: the
// Agent's card declares the lease extension). status.lease changes only
// when the grant first shows, or to say once that none came: renewals
// cost no API server write.
func RecordLease(spec *v1alpha1.DelegationSpec, st *v1alpha1.DelegationStatus, expiresAt time.Time, declared bool) {
	if spec.Lease == nil {
		return
	}
	ttl := spec.Lease.TTL
	switch {
	case !expiresAt.IsZero() && (st.Lease == nil || !st.Lease.Granted):
		until := metav1.NewTime(expiresAt)
		st.Lease = &v1alpha1.LeaseStatus{TTL: &ttl, Granted: true, GrantedUntil: &until}
	case expiresAt.IsZero() && st.Lease == nil:
		reason := "the agent did not grant a lease"
		if !declared {
			reason = "the agent card does not declare the lease extension"
		}
		st.Lease = &v1alpha1.LeaseStatus{TTL: &ttl, Granted: false, Reason: reason}
	}
}
