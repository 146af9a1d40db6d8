/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// ConditionLeaseHandOver is False when the Delegation's lease is too short
// to survive a hand-over between the operator's leaders: a leader that dies
// leaves its tasks unrenewed until a standby takes over.
const ConditionLeaseHandOver = "LeaseHandOver"

// ReasonTTLBelowHandOver is the reason of that condition (and of the Warning
// event) when lease.ttl is below the shortest ttl that survives a hand-over.
const ReasonTTLBelowHandOver = "TTLBelowHandOver"

// SetLeaseHandOver sets the LeaseHandOver condition False when the
// Delegation's lease.ttl is below minTTL and removes it otherwise (also when
// minTTL is 0: no leader election, no hand-over). It reports whether the
// condition is set.
func SetLeaseHandOver(d *v1alpha1.Delegation, minTTL time.Duration, now time.Time) bool {
	if minTTL <= 0 || d.Spec.Lease == nil || d.Spec.Lease.TTL.Duration >= minTTL || Settled(d.Status.Phase) {
		meta.RemoveStatusCondition(&d.Status.Conditions, ConditionLeaseHandOver)
		return false
	}
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
		Type: ConditionLeaseHandOver, Status: metav1.ConditionFalse, Reason: ReasonTTLBelowHandOver,
		Message: fmt.Sprintf("lease.ttl %s is below %s, the shortest that survives a hand-over between the operator's leaders: "+
			"the agent may drop the task when the leader dies", d.Spec.Lease.TTL.Duration, minTTL),
		ObservedGeneration: d.Generation, LastTransitionTime: metav1.NewTime(now),
	})
	return true
}
