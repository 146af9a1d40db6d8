/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"math"
	"slices"
	"testing"
	"time"
)

// percentile of samples (nearest rank); zero when there are none.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// leaseStats is what the agent saw of leased tasks during a hold.
type leaseStats struct {
	Tasks     int           // tasks that had started before the hold ended
	Renewals  int           // renewals that arrived during the hold
	PerSecond float64       // Renewals per second of hold
	Lateness  time.Duration // p99 of how much later than ttl/3 a renewal came
	Lapses    int           // tasks that went longer than ttl without a renewal
}

// analyseLeases looks at the hold [from, to). A task's renewals are due
// every ttl/3 after it started; each gap between one renewal (or the start)
// and the next that ends in the hold is a sample of lateness (how much longer
// than ttl/3 it was, zero when on time). A gap still open at the end counts
// once it is overdue, so a task that is never renewed shows as late, and as
// a lapse once the gap exceeds ttl.
func analyseLeases(started map[string]time.Time, renewals map[string][]time.Time, from, to time.Time, ttl time.Duration) leaseStats {
	due := ttl / 3
	var st leaseStats
	var lateness []time.Duration
	for id, start := range started {
		if !start.Before(to) {
			continue
		}
		st.Tasks++
		times := slices.Clone(renewals[id])
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		prev, lapsed := start, false
		sample := func(gap time.Duration) {
			lateness = append(lateness, max(gap-due, 0))
			lapsed = lapsed || gap > ttl
		}
		for _, at := range times {
			if !at.Before(to) {
				break
			}
			if !at.Before(from) {
				st.Renewals++
				sample(at.Sub(prev))
			}
			prev = at
		}
		if open := to.Sub(prev); open > due {
			sample(open)
		}
		if lapsed {
			st.Lapses++
		}
	}
	st.PerSecond = float64(st.Renewals) / to.Sub(from).Seconds()
	st.Lateness = percentile(lateness, 0.99)
	return st
}

func TestAnalyseLeases(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ttl := 3 * time.Second // renewals due every second
	started := map[string]time.Time{"on-time": at(0), "late": at(0), "never": at(0), "after": at(20)}
	renewals := map[string][]time.Time{
		"on-time": {at(1), at(2), at(3), at(4), at(5), at(6)},
		"late":    {at(1), at(2.5), at(3.5), at(4.5), at(5.5)},
	}
	st := analyseLeases(started, renewals, at(2), at(6), ttl)
	if st.Tasks != 3 {
		t.Errorf("tasks = %d, want 3 (one starts after the hold)", st.Tasks)
	}
	if st.Renewals != 8 { // on-time: 2,3,4,5; late: 2.5,3.5,4.5,5.5
		t.Errorf("renewals in the hold = %d, want 8", st.Renewals)
	}
	if st.Lapses != 1 {
		t.Errorf("lapses = %d, want 1 (the task never renewed)", st.Lapses)
	}
	// "never" is 5 s overdue at the end: the worst sample.
	if st.Lateness != 5*time.Second {
		t.Errorf("lateness p99 = %s, want 5s", st.Lateness)
	}
	if st.PerSecond != 2 {
		t.Errorf("per second = %v, want 2", st.PerSecond)
	}
}
