/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// admission remembers the tasks this process admitted under an Agent's
// spec.maxConcurrentTasks whose send marker the cache may not show yet, so
// two passes at once cannot both take the last place.
type admission struct {
	mu       sync.Mutex
	admitted map[types.UID]types.NamespacedName // task -> Agent
}

// admit keeps a Delegation Pending (reason AgentAtCapacity) while its Agent
// runs spec.maxConcurrentTasks tasks; places go in creation order.
func (r *DelegationReconciler) admit(ctx context.Context, s *scope) (waiting bool, err error) {
	if s.agent == nil || s.agent.Spec.MaxConcurrentTasks == nil {
		return false, nil
	}
	limit := int(*s.agent.Spec.MaxConcurrentTasks)
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(s.d.Namespace), client.MatchingFields{indexAgent: s.agent.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return true, err
	}
	agentKey := client.ObjectKeyFromObject(s.agent)
	a := &r.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admitted == nil {
		a.admitted = map[types.UID]types.NamespacedName{}
	}
	running := 0
	var queue []*v1alpha1.Delegation
	live := map[types.UID]bool{}
	for i := range list.Items {
		d := &list.Items[i]
		live[d.UID] = true
		started := d.Status.TaskID != "" || d.Status.SendStarted != nil || sendMarker(d) != nil
		_, admitted := a.admitted[d.UID]
		switch {
		case delegation.Settled(d.Status.Phase) || !d.DeletionTimestamp.IsZero():
			delete(a.admitted, d.UID)
		case started:
			delete(a.admitted, d.UID) // the cache shows it now
			running++
		case admitted:
			running++
		case d.Spec.TaskID == "":
			queue = append(queue, d)
		}
	}
	for uid, agent := range a.admitted {
		if agent == agentKey && !live[uid] {
			delete(a.admitted, uid)
		}
	}
	slices.SortFunc(queue, func(a, b *v1alpha1.Delegation) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	free := limit - running
	for i, d := range queue {
		if i >= free {
			break
		}
		if d.UID == s.d.UID {
			a.admitted[d.UID] = agentKey
			return false, nil
		}
	}
	r.setPhase(s, delegation.Progress(v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity,
		fmt.Sprintf("agent %s runs %d of %d tasks (maxConcurrentTasks); waiting in creation order", s.agent.Name, running, limit)))
	s.d.Status.Outcome.Message = truncate(s.d.Status.Outcome.Message, maxOutcomeMessage)
	return true, nil
}
