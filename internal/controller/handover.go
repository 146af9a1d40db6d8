/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tether-dev/tether/internal/delegation"
)

// warnShortLease marks a Delegation whose lease.ttl would lapse during a
// leader hand-over, with a Warning event the first time.
func (r *DelegationReconciler) warnShortLease(s *scope) {
	if !delegation.SetLeaseHandOver(s.d, r.Options.MinHandOverTTL, s.now) {
		return
	}
	if meta.FindStatusCondition(s.base.Status.Conditions, delegation.ConditionLeaseHandOver) == nil {
		c := meta.FindStatusCondition(s.d.Status.Conditions, delegation.ConditionLeaseHandOver)
		r.Recorder.Eventf(s.d, nil, "Warning", delegation.ReasonTTLBelowHandOver, "Lease", "%s", c.Message)
	}
}
