/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// A send's answer waits for the cache only while the cache misses the write
// made before that send; a look-up's answer never waits (no write came
// before it), or a pass that saw NotSent would wait forever for it.
func TestAnswerAheadOfCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	marker := metav1.NewTime(now.Add(-time.Second))
	cases := []struct {
		name     string
		spec     v1alpha1.DelegationSpec
		status   v1alpha1.DelegationStatus
		lookUp   bool
		finished time.Time
		ahead    bool
	}{
		{name: "the cache does not show the marker yet", finished: now.Add(-time.Second), ahead: true},
		{name: "the cache shows the marker", status: v1alpha1.DelegationStatus{SendStarted: &marker, SendResult: v1alpha1.SendInFlight},
			finished: now.Add(-time.Second)},
		{name: "the cache still says the send never left, though it was made again",
			status: v1alpha1.DelegationStatus{SendStarted: &marker, SendResult: v1alpha1.SendNotSent}, finished: now.Add(-time.Second), ahead: true},
		{name: "a look-up follows no write", lookUp: true, finished: now.Add(-time.Second)},
		{name: "a look-up while the cache shows NotSent never waits (nothing would bring a fresher copy)", lookUp: true,
			status: v1alpha1.DelegationStatus{SendStarted: &marker, SendResult: v1alpha1.SendNotSent}, finished: now.Add(-time.Second)},
		{name: "an adoption follows no write", spec: v1alpha1.DelegationSpec{TaskID: "t1"}, finished: now.Add(-time.Second)},
		{name: "the task id is known already", status: v1alpha1.DelegationStatus{TaskID: "t1"}, finished: now.Add(-time.Second)},
		{name: "no answer waits past the cache lag", finished: now.Add(-CacheLag)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(AnswerAheadOfCache(&c.spec, &c.status, c.lookUp, c.finished, now)).To(Equal(c.ahead))
		})
	}
}
