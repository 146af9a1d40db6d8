/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// A card read that found nothing new moves only lastRefreshTime: it must
// not wake every Delegation of the Agent. Anything a Delegation acts on must.
func TestAgentChangedIgnoresARefreshAlone(t *testing.T) {
	base := func() *v1alpha1.Agent {
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1, ResourceVersion: "1"}}
		a.Status.Endpoint = "http://agent"
		a.Status.ObservedGeneration = 1
		a.Status.LastRefreshTime = &metav1.Time{Time: time.Unix(100, 0)}
		a.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
		return a
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.Agent)
		wakes  bool
	}{
		{"refresh time only", func(a *v1alpha1.Agent) { a.Status.LastRefreshTime = &metav1.Time{Time: time.Unix(200, 0)} }, false},
		{"spec changed", func(a *v1alpha1.Agent) { a.Generation = 2 }, true},
		{"not ready any more", func(a *v1alpha1.Agent) { a.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"new endpoint", func(a *v1alpha1.Agent) { a.Status.Endpoint = "http://elsewhere" }, true},
		{"card read for the new generation", func(a *v1alpha1.Agent) { a.Status.ObservedGeneration = 2 }, true},
		{"being deleted", func(a *v1alpha1.Agent) { a.DeletionTimestamp = &metav1.Time{Time: time.Unix(300, 0)} }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := base()
			cur.ResourceVersion = "2"
			c.change(cur)
			if got := agentChanged().Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: cur}); got != c.wakes {
				t.Errorf("wakes the Agent's Delegations = %v, want %v", got, c.wakes)
			}
		})
	}
}

// Only a Delegation that waits for room is in the waiting index, under
// what it waits on.
func TestWaitingForIndexesOnlyWaitingDelegations(t *testing.T) {
	d := func(phase v1alpha1.Phase, reason string) *v1alpha1.Delegation {
		x := &v1alpha1.Delegation{Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"},
			ParentRef: &v1alpha1.LocalRef{Name: "parent"}}}
		x.Namespace = "team"
		x.Status.Phase = phase
		if reason != "" {
			x.Status.Outcome = &v1alpha1.Outcome{Reason: reason}
		}
		return x
	}
	cases := []struct {
		name string
		d    *v1alpha1.Delegation
		want []string
	}{
		{"waiting for a place at its Agent", d(v1alpha1.PhasePending, delegation.ReasonAgentAtCapacity), []string{"AgentAtCapacity/team/agent"}},
		{"waiting for its parent's budget", d(v1alpha1.PhasePending, delegation.ReasonBudgetExhausted), []string{"BudgetExhausted/parent"}},
		{"waiting for a quota of its namespace", d(v1alpha1.PhasePending, delegation.ReasonQuotaExceeded), []string{"QuotaExceeded/"}},
		{"settled while waiting for a quota", d(v1alpha1.PhaseCanceled, delegation.ReasonQuotaExceeded), nil},
		{"running", d(v1alpha1.PhaseRunning, delegation.ReasonSent), nil},
		{"settled with a waiting reason", d(v1alpha1.PhaseCanceled, delegation.ReasonAgentAtCapacity), nil},
		{"no outcome yet", d("", ""), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := waitingFor(c.d)
			if len(got) != len(c.want) || (len(got) == 1 && got[0] != c.want[0]) {
				t.Errorf("waitingFor = %v, want %v", got, c.want)
			}
		})
	}
}
