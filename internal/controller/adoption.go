/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// refuseAdoption applies delegation.Adoption to the task spec.taskID named:
// true when the Delegation was failed instead (its status then never
// records the task id).
func (r *DelegationReconciler) refuseAdoption(ctx context.Context, s *scope, t *a2a.Task) (bool, error) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(s.d.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing the namespace's Delegations to check an adoption: %w", err)
	}
	local := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		local[string(list.Items[i].UID)] = true
	}
	step, ok := delegation.Adoption(string(s.d.UID), t, func(uid string) bool { return local[uid] })
	if ok {
		return false, nil
	}
	r.setPhase(s, step.Record())
	return true, nil
}
