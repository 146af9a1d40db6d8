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
// the record of the failure when the task may not be adopted (status then
// never records its id), nil when it may.
func (r *DelegationReconciler) refuseAdoption(ctx context.Context, s *scope, t *a2a.Task) (*delegation.Record, error) {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(s.d.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the namespace's Delegations to check an adoption: %w", err)
	}
	local := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		local[string(list.Items[i].UID)] = true
	}
	step, ok := delegation.Adoption(string(s.d.UID), t, func(uid string) bool { return local[uid] })
	if ok {
		return nil, nil
	}
	rec := step.Record()
	return &rec, nil
}
