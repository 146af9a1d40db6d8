/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// A card read for this generation within the refresh interval is not read
// again on every event; a changed spec, a failed read or an old read is.
func TestCardFresh(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	agent := func(gen, observed int64, ready bool, readAgo time.Duration) *v1alpha1.Agent {
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		a.Status.ObservedGeneration = observed
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		a.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status}}
		if readAgo >= 0 {
			at := metav1.NewTime(now.Add(-readAgo))
			a.Status.LastRefreshTime = &at
		}
		return a
	}
	for _, tc := range []struct {
		name  string
		agent *v1alpha1.Agent
		fresh bool
		wait  time.Duration
	}{
		{"read a minute ago", agent(1, 1, true, time.Minute), true, 4 * time.Minute},
		{"read longer ago than the interval", agent(1, 1, true, 6*time.Minute), false, 0},
		{"spec changed since", agent(2, 1, true, time.Minute), false, 0},
		{"not ready", agent(1, 1, false, time.Minute), false, 0},
		{"never read", agent(1, 1, true, -1), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			wait, fresh := cardFresh(tc.agent, 5*time.Minute, now)
			g.Expect(fresh).To(Equal(tc.fresh))
			if tc.fresh {
				g.Expect(wait).To(Equal(tc.wait))
			}
		})
	}
}
