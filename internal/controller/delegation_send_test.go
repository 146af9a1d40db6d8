/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// A send's answer waits for the cache only while the cache misses the write
// made before that send; a look-up's answer never waits (no write came
// before it), or a pass that saw NotSent would wait forever for it.
func TestAnswerAheadOfCache(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	marked := metav1.NewTime(now.Add(-time.Second))
	sent := agentio.Result{Value: sendOutcome{}, Err: errors.New("connection refused"), Finished: now.Add(-100 * time.Millisecond)}
	lookedUp := agentio.Result{Value: sendOutcome{lookedUp: true, lookupErr: errors.New("connection refused")}, Finished: sent.Finished}
	noClient := agentio.Result{Err: errors.New("reading Secret"), Finished: sent.Finished}
	old := sent
	old.Finished = now.Add(-cacheLag)
	d := func(started *metav1.Time, result v1alpha1.SendResult, taskID string) *v1alpha1.Delegation {
		return &v1alpha1.Delegation{Status: v1alpha1.DelegationStatus{SendStarted: started, SendResult: result, TaskID: taskID}}
	}
	cases := []struct {
		name string
		d    *v1alpha1.Delegation
		res  agentio.Result
		want bool
	}{
		{"the first send, marker not in the cache yet", d(nil, "", ""), sent, true},
		{"the first send, marker in the cache", d(&marked, v1alpha1.SendInFlight, ""), sent, false},
		{"a send made again, InFlight not in the cache yet", d(&marked, v1alpha1.SendNotSent, ""), sent, true},
		{"a send whose client could not be built", d(nil, "", ""), noClient, true},
		{"a look-up while the cache shows NotSent", d(&marked, v1alpha1.SendNotSent, ""), lookedUp, false},
		{"a look-up while the cache shows no marker", d(nil, "", ""), lookedUp, false},
		{"an answer older than the cache's lag", d(nil, "", ""), old, false},
		{"a task id already recorded", d(&marked, v1alpha1.SendNotSent, "t1"), sent, false},
	}
	for _, c := range cases {
		if got := answerAheadOfCache(c.d, c.res, now); got != c.want {
			t.Errorf("%s: answerAheadOfCache = %v, want %v", c.name, got, c.want)
		}
	}
}

// A send whose client could not be built (a Secret missing) never left the
// operator: it is made again, never taken for one the agent may have.
func TestSendWithoutAClientIsNotSent(t *testing.T) {
	err := a2a.NotMade(errors.New(`reading Secret ns/creds: secrets "creds" not found`))
	if got := callResult(err); got != delegation.CallNotSent {
		t.Fatalf("callResult = %s, want %s", got, delegation.CallNotSent)
	}
}
