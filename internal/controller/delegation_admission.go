/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// admit keeps a Delegation Pending (reason AgentAtCapacity, the record
// returned) while its Agent runs spec.maxConcurrentTasks tasks;
// delegation.Admit decides who goes.
func (r *DelegationReconciler) admit(ctx context.Context, s *scope) (wait *delegation.Record, err error) {
	if s.agent == nil || s.agent.Spec.MaxConcurrentTasks == nil {
		return nil, nil
	}
	limit := int(*s.agent.Spec.MaxConcurrentTasks)
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.MatchingFields{indexAgent: agentIndexValue(client.ObjectKeyFromObject(s.agent))},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	agentKey := client.ObjectKeyFromObject(s.agent)
	a := &r.memory.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admitted == nil {
		a.admitted = map[types.UID]types.NamespacedName{}
	}
	all := make([]delegation.Contender, 0, len(list.Items))
	live := map[types.UID]bool{}
	for i := range list.Items {
		d := &list.Items[i]
		live[d.UID] = true
		c := delegation.Contender{UID: string(d.UID), Name: d.Name, Created: d.CreationTimestamp.Time, Adopts: d.Spec.TaskID != "",
			Done:    delegation.Settled(d.Status.Phase) || !d.DeletionTimestamp.IsZero(),
			Started: d.Status.TaskID != "" || d.Status.SendStarted != nil || sendMarker(d) != nil}
		if c.Done || c.Started {
			delete(a.admitted, d.UID) // the cache shows it now
		} else {
			_, c.Admitted = a.admitted[d.UID]
		}
		all = append(all, c)
	}
	for uid, agent := range a.admitted {
		if agent == agentKey && !live[uid] {
			delete(a.admitted, uid)
		}
	}
	admitted, running := delegation.Admit(string(s.d.UID), limit, all)
	if admitted {
		a.admitted[s.d.UID] = agentKey
		return nil, nil
	}
	rec := delegation.Progress(v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity,
		fmt.Sprintf("agent %s runs %d of %d tasks (maxConcurrentTasks); waiting in creation order", s.agent.Name, running, limit))
	return &rec, nil
}
