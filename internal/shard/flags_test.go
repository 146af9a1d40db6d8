/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func defaults() Flags {
	return Flags{Shards: 1, Shard: -1, Filtering: "auto",
		LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
}

// The defaults hand a shard over within ~9 s, so a 14 s lease survives it
// (and controller-runtime's own defaults would need 38 s).
func TestHandOverAndMinTTL(t *testing.T) {
	g := NewWithT(t)
	f := defaults()
	g.Expect(f.HandOver()).To(Equal(9200 * time.Millisecond))
	g.Expect(f.MinTTL()).To(Equal(14 * time.Second))
	f.LeaseDuration, f.RenewDeadline, f.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	g.Expect(f.MinTTL()).To(Equal(38 * time.Second))
}

func TestResolve(t *testing.T) {
	g := NewWithT(t)
	s, err := defaults().Resolve()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(Shard{Index: 0, Count: 1}), "one shard needs no index")

	f := defaults()
	f.Shards = 3
	t.Setenv("POD_NAME", "tether-2")
	s, err = f.Resolve()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(Shard{Index: 2, Count: 3}), "the StatefulSet ordinal")

	t.Setenv("POD_NAME", "tether-7d9f-x")
	_, err = f.Resolve()
	g.Expect(err).To(MatchError(ContainSubstring("does not end in a StatefulSet ordinal")))
	t.Setenv("POD_NAME", "tether-5")
	_, err = f.Resolve()
	g.Expect(err).To(MatchError(ContainSubstring("--shard must be in [0, 3)")))

	f.Shard = 1
	s, err = f.Resolve()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Index).To(Equal(1), "--shard wins over the pod name")

	bad := defaults()
	bad.RenewDeadline = bad.LeaseDuration
	_, err = bad.Resolve()
	g.Expect(err).To(MatchError(ContainSubstring("must be shorter than --leader-election-lease-duration")))
	bad = defaults()
	bad.RetryPeriod = 4 * time.Second
	_, err = bad.Resolve()
	g.Expect(err).To(MatchError(ContainSubstring("must be longer than 1.2 × --leader-election-retry-period")))
	bad = defaults()
	bad.Filtering = "both"
	_, err = bad.Resolve()
	g.Expect(err).To(MatchError(ContainSubstring("--shard-filtering must be auto, server or client")))
}
