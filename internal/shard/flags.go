/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Leader election timings. Measured with controller-runtime's defaults
// (lease 15 s, renew deadline 10 s, retry 2 s): a SIGKILLed leader's tasks
// went unrenewed for up to 22 s, so every lease under ~25 s lapsed. These
// bound the hand-over at lease + 2 retry periods (each stretched by up to
// client-go's jitter of 1.2) = 8.2 s, while a leader that cannot renew
// gives up after 4 s, well before a standby may take over after 6 s.
const (
	DefaultLeaseDuration = 6 * time.Second
	DefaultRenewDeadline = 4 * time.Second
	DefaultRetryPeriod   = 500 * time.Millisecond
	// jitterFactor is client-go's leader election jitter on the retry period.
	jitterFactor = 1.2
	// startUp is what a standby with a warm cache needs after acquiring the
	// Lease before its first renewals are on their way.
	startUp = time.Second
)

// Flags are the operator's sharding and leader election flags.
type Flags struct {
	Shards int
	// Shard is the index; -1 takes it from the ordinal at the end of the
	// pod's name (a StatefulSet pod "tether-2" is shard 2).
	Shard     int
	Filtering string
	// Lease timings of the shard's leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Bind registers the flags.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.IntVar(&f.Shards, "shards", 1, "Number of shards; each owns the namespaces whose FNV-1a-64 hash falls in its range.")
	fs.IntVar(&f.Shard, "shard", -1, "This process's shard, in [0, --shards); -1 takes the ordinal at the end of the pod's name (StatefulSet).")
	fs.StringVar(&f.Filtering, "shard-filtering", "auto",
		"Where the shard's objects are picked out: server (the API server's ShardedListAndWatch), client (before the cache), "+
			"or auto (server when a probe finds the API server filters).")
	fs.DurationVar(&f.LeaseDuration, "leader-election-lease-duration", DefaultLeaseDuration,
		"How long a standby waits after the leader's last renewal before taking over its shard.")
	fs.DurationVar(&f.RenewDeadline, "leader-election-renew-deadline", DefaultRenewDeadline,
		"How long a leader keeps trying to renew its Lease before it gives the shard up (and exits).")
	fs.DurationVar(&f.RetryPeriod, "leader-election-retry-period", DefaultRetryPeriod, "How often leaders renew and standbys try to take over.")
}

// Resolve is the shard this process serves.
func (f Flags) Resolve() (Shard, error) {
	s := Shard{Index: f.Shard, Count: f.Shards}
	if s.Index == -1 {
		if s.Count == 1 {
			s.Index = 0
		} else {
			i, err := ordinal()
			if err != nil {
				return s, err
			}
			s.Index = i
		}
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	if f.RenewDeadline >= f.LeaseDuration {
		return s, fmt.Errorf("--leader-election-renew-deadline (%s) must be shorter than --leader-election-lease-duration (%s)",
			f.RenewDeadline, f.LeaseDuration)
	}
	if float64(f.RenewDeadline) <= jitterFactor*float64(f.RetryPeriod) {
		return s, fmt.Errorf("--leader-election-renew-deadline (%s) must be longer than %g × --leader-election-retry-period (%s)",
			f.RenewDeadline, jitterFactor, f.RetryPeriod)
	}
	switch Filtering(f.Filtering) {
	case ServerSide, ClientSide, "auto":
	default:
		return s, fmt.Errorf("--shard-filtering must be auto, server or client, not %q", f.Filtering)
	}
	return s, nil
}

// ordinal reads the shard from the pod's name: POD_NAME, else the host
// name, ends in -<ordinal> in a StatefulSet.
func ordinal() (int, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil || n < 0 {
		return 0, fmt.Errorf("--shard is not set and the pod name %q does not end in a StatefulSet ordinal", name)
	}
	return n, nil
}

// HandOver bounds how long a shard's tasks may go unrenewed when its leader
// dies: the standby sees the last renewal up to one retry period late,
// waits the lease duration, tries again up to one retry period later
// (each retry stretched by the jitter), then starts.
func (f Flags) HandOver() time.Duration {
	return f.LeaseDuration + time.Duration(2*(1+jitterFactor)*float64(f.RetryPeriod)) + startUp
}

// MinTTL is the shortest lease.ttl that survives a hand-over: a task is
// renewed every ttl/3, so the last renewal before the leader died can be
// ttl/3 old; the standby's renewal must come before the remaining 2/3 run
// out: ttl/3 + HandOver < ttl. Rounded up to a whole second.
func (f Flags) MinTTL() time.Duration {
	return time.Duration(math.Ceil(1.5*f.HandOver().Seconds())) * time.Second
}
