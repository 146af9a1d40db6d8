/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// poolSample is one reading of an Agent pool's load by namespace from the
// operator's metrics.
type poolSample struct {
	at      time.Time
	running map[string]int // tether_agent_namespace_calls_in_flight
	queued  map[string]int // tether_agent_namespace_calls_queued
}

// poolSampler reads the operator's metrics for one pool every interval
// until its context ends.
type poolSampler struct {
	mu      sync.Mutex
	samples []poolSample
	done    chan struct{}
}

func (e *env) samplePool(ctx context.Context, pool string, every time.Duration) *poolSampler {
	s := &poolSampler{done: make(chan struct{})}
	url := "http://" + e.metrics + "/metrics"
	// Uncompressed: gzip at every reading was most of what serving it cost.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			at := time.Now()
			sample, err := scrapePool(ctx, hc, url, pool)
			if err != nil {
				continue // a missed reading is a gap, which checkFairShare sees
			}
			sample.at = at
			s.mu.Lock()
			s.samples = append(s.samples, sample)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *poolSampler) latest() (poolSample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return poolSample{}, false
	}
	return s.samples[len(s.samples)-1], true
}

// wait returns the samples once the sampler's context ended.
func (s *poolSampler) wait() []poolSample {
	<-s.done
	return s.samples
}

func scrapePool(ctx context.Context, hc *http.Client, url, pool string) (poolSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return poolSample{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return poolSample{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return poolSample{}, fmt.Errorf("metrics: %s", resp.Status)
	}
	s := poolSample{running: map[string]int{}, queued: map[string]int{}}
	const inFlight, queued = "tether_agent_namespace_calls_in_flight{", "tether_agent_namespace_calls_queued{"
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]int
		switch {
		case strings.HasPrefix(line, inFlight):
			into, line = s.running, line[len(inFlight):]
		case strings.HasPrefix(line, queued):
			into, line = s.queued, line[len(queued):]
		default:
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok || label(labels, "agent") != pool {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			into[label(labels, "namespace")] = int(v)
		}
	}
	return s, sc.Err()
}

// saveMetrics saves what the operator's metrics endpoint serves now as name
// in the output folder; a failure is only logged.
func (e *env) saveMetrics(name string) {
	resp, err := http.Get("http://" + e.metrics + "/metrics")
	if err == nil {
		defer func() { _ = resp.Body.Close() }()
		var body []byte
		if body, err = io.ReadAll(resp.Body); err == nil {
			err = os.WriteFile(filepath.Join(e.out, name), body, 0o644)
		}
	}
	if err != nil {
		e.t.Logf("metrics %s: %v", name, err)
	}
}

// fairShareCheck is the worst moment of the flooding namespaces' places
// against their fair share.
type fairShareCheck struct {
	// Samples where a flooding namespace and at least one other namespace
	// waited throughout the window.
	Samples int
	// At the worst of them: the namespace, the places it held, how many
	// namespaces waited throughout, and ceil(places / Waiting).
	Namespace string
	Held      int
	Waiting   int
	Share     int
}

// checkFairShare reads the pool's samples for the share's promise. A call
// already running is never interrupted, so just after another namespace
// starts waiting a flood may still hold every place; the promise is about
// the places given while others wait. No call lasts longer than window, so
// every place held at a sample was given within the window before it: if a
// set of namespaces waited in every sample of that window (samples at most
// maxGap apart), a flooding namespace among them was given each of its
// places while they all waited, and holds at most ceil(places / their
// number).
func checkFairShare(samples []poolSample, floods []string, places int, window, maxGap time.Duration) fairShareCheck {
	var c fairShareCheck
	worst := math.MinInt
	for j, s := range samples {
		from := s.at.Add(-window)
		i := j // the last sample at or before the window's start
		for i > 0 && samples[i].at.After(from) {
			i--
		}
		if samples[i].at.After(from) {
			continue // the window starts before the first sample
		}
		waited := map[string]bool{}
		for ns, n := range s.queued {
			if n > 0 {
				waited[ns] = true
			}
		}
		for k := i; k < j && len(waited) >= 2; k++ {
			if samples[k+1].at.Sub(samples[k].at) > maxGap {
				waited = nil
				break
			}
			for ns := range waited {
				if samples[k].queued[ns] == 0 {
					delete(waited, ns)
				}
			}
		}
		if len(waited) < 2 {
			continue
		}
		share := (places + len(waited) - 1) / len(waited)
		counted := false
		for _, ns := range floods {
			if !waited[ns] {
				continue
			}
			counted = true
			if held := s.running[ns]; held-share > worst {
				worst = held - share
				c.Namespace, c.Held, c.Waiting, c.Share = ns, held, len(waited), share
			}
		}
		if counted {
			c.Samples++
		}
	}
	return c
}

func TestCheckFairShare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var samples []poolSample
	at := func(ms int, running, queued map[string]int) {
		samples = append(samples, poolSample{at: t0.Add(time.Duration(ms) * time.Millisecond), running: running, queued: queued})
	}
	// 0-1 s: f1 alone holds all 8 places.
	for ms := 0; ms < 1000; ms += 100 {
		at(ms, map[string]int{"f1": 8}, map[string]int{"f1": 50})
	}
	// 1.0-1.1 s: a steady namespace waits briefly while f1 still holds all
	// 8 (taken while alone): no breach.
	at(1000, map[string]int{"f1": 8}, map[string]int{"f1": 50, "s": 1})
	// 1.1-2.9 s: f2 floods too; the two share the places...
	for ms := 1100; ms < 3000; ms += 100 {
		at(ms, map[string]int{"f1": 4, "f2": 4}, map[string]int{"f1": 50, "f2": 50})
	}
	// ...until f1 holds 5 while f2 waited throughout the window.
	at(3000, map[string]int{"f1": 5, "f2": 3}, map[string]int{"f1": 50, "f2": 50})

	c := checkFairShare(samples, []string{"f1", "f2"}, 8, 500*time.Millisecond, 200*time.Millisecond)
	if c.Namespace != "f1" || c.Held != 5 || c.Waiting != 2 || c.Share != 4 {
		t.Errorf("worst = %+v, want f1 holding 5 of a share of 4 with 2 waiting", c)
	}
	// Samples from 1.6 s (the first whose window lies within f2's wait) to 3.0 s.
	if c.Samples != 15 {
		t.Errorf("samples = %d, want 15", c.Samples)
	}

	// A reading missed for longer than maxGap breaks the windows over it.
	gapped := append(append([]poolSample{}, samples[:25]...), samples[30:]...) // 2.5-2.9 s missing
	if c := checkFairShare(gapped, []string{"f1", "f2"}, 8, 500*time.Millisecond, 200*time.Millisecond); c.Samples != 9 || c.Held != 4 {
		t.Errorf("with a gap: %+v, want the 9 samples 1.6-2.4 s, f1 at its share", c)
	}
}
