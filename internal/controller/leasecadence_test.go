/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/pkg/agentkit"
)

// A leased task is read at the shorter of its Agent's pollInterval and
// ttl/3, and every read of it carries the lease extension, so an agent
// counts each poll as a renewal: at an Agent polled every 200ms a task of
// ttl 30s is renewed about every 200ms (its polls), at one polled every 1s
// about every second, and a task of ttl 3s at an Agent polled hourly every
// second (its lease). No cadence is tighter than what those allow: a stream
// or a read that is asked for again at once would show far more reads.
func TestLeasedTaskIsReadAtTheShorterOfPollIntervalAndTTLThird(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t, agentkit.WithMaxLeaseTTL(time.Minute))
	e.createAgent("fast", ka.URL(), pollEvery(200*time.Millisecond))
	e.createAgent("second", ka.URL(), pollEvery(time.Second))
	e.createAgent("hourly", ka.URL(), pollEvery(time.Hour))
	cases := []struct {
		name, agent string
		ttl         time.Duration
		interval    time.Duration // what the reads should follow
	}{
		{"polled-fast", "fast", 30 * time.Second, 200 * time.Millisecond},
		{"polled-second", "second", 30 * time.Second, time.Second},
		{"renewed", "hourly", 3 * time.Second, time.Second},
	}
	for _, c := range cases {
		e.create(e.kitTask(c.name, c.agent, "forever delay=1h", withLease(c.ttl)))
	}
	ids := map[string]string{}
	for _, c := range cases {
		ids[c.name] = e.waitLeased(c.name).Status.TaskID
	}

	const window = 6 * time.Second
	start := time.Now()
	time.Sleep(window)
	end := time.Now()
	for _, c := range cases {
		n := 0
		for _, r := range ka.Renewals(ids[c.name]) {
			if !r.At.Before(start) && r.At.Before(end) {
				n++
			}
		}
		ideal := int(window / c.interval)
		t.Logf("%s (ttl %s, every %s): %d reads with the lease extension in %s (ideal %d)",
			c.name, c.ttl, c.interval, n, end.Sub(start).Round(time.Millisecond), ideal)
		// Generous both ways: a loaded machine stretches reads, never
		// multiplies them.
		e.g.Expect(n).To(BeNumerically(">=", ideal/3), "%s: reads come at its cadence", c.name)
		e.g.Expect(n).To(BeNumerically("<=", 2*ideal+1), "%s: no more reads than its cadence allows", c.name)
	}
}
