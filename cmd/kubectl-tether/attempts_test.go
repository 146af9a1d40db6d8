/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// retried is a Delegation waiting for its second of three attempts.
func retried() v1alpha1.Delegation {
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	return dlg("flaky", "worker", v1alpha1.PhaseRunning, 2*time.Minute,
		outcome("RetryScheduled", "", "attempt 1/3 failed (Transient): busy; attempt 2/3 at 2026-11-29T12:00:10Z"),
		func(d *v1alpha1.Delegation) {
			d.Status.Attempt, d.Status.MaxAttempts = 2, 3
			d.Status.Attempts = []v1alpha1.Attempt{{Attempt: 1, TaskID: "t-1", StartTime: at(-time.Minute), CompletionTime: at(-5 * time.Second),
				Outcome: &v1alpha1.Outcome{Reason: "RemoteFailed", FailureClass: v1alpha1.FailureTransient, Message: "busy"},
				Spent:   v1alpha1.Meters{"tokens": 40}}}
		})
}

func TestTreeAndDescribeShowTheAttempt(t *testing.T) {
	g := NewWithT(t)
	items := []v1alpha1.Delegation{retried()}
	tree := renderTree(roots(items), childrenByParent(items), now, false)
	g.Expect(tree).To(ContainSubstring("RetryScheduled (attempt 2/3)"))

	out := renderDescribe(&items[0], now, false)
	g.Expect(out).To(ContainSubstring("Attempt:        attempt 2/3\n"))
	g.Expect(out).To(ContainSubstring("Attempts:\n"))
	lines := strings.Split(out, "\n")
	var row string
	for i, l := range lines {
		if strings.Contains(l, "ATTEMPT") {
			row = lines[i+1]
		}
	}
	g.Expect(strings.Fields(row)).To(ContainElements("1", "t-1", "RemoteFailed", "Transient", "tokens=40"))

	single := dlg("once", "worker", v1alpha1.PhaseRunning, time.Minute, outcome("Working", "", ""))
	single.Status.Attempt, single.Status.MaxAttempts = 1, 1
	g.Expect(renderDescribe(&single, now, false)).NotTo(ContainSubstring("Attempt"), "one attempt: nothing to count")
}
