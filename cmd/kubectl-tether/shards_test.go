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
	"github.com/tether-dev/tether/internal/shard"
)

func TestRenderShards(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	renewed := metav1.NewMicroTime(now.Add(-2 * time.Second))
	leases := []shardLease{
		{Shard: shard.Shard{Index: 0, Count: 2}, namespace: "tether-system", name: "tether-shard-0", holder: "pod-a_1", renewed: &renewed},
		{Shard: shard.Shard{Index: 1, Count: 2}, namespace: "tether-system", name: "tether-shard-1"},
	}
	n, err := shardCount(leases)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(2))
	items := make([]v1alpha1.Delegation, 0, 4)
	for _, ns := range []string{"payments", "payments", "search", "research-lab"} {
		items = append(items, v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns}})
	}
	out := renderShards(leases, n, items, now)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^SHARD\s+RANGE\s+LEASE\s+LEADER\s+RENEWED\s+NAMESPACES\s+DELEGATIONS$`))
	g.Expect(lines[1]).To(MatchRegexp(`^0/2\s+\[0x0000000000000000, 0x8000000000000000\)\s+tether-system/tether-shard-0\s+pod-a_1\s+2s ago\s+`))
	g.Expect(lines[2]).To(MatchRegexp(`^1/2\s+\[0x8000000000000000, 0x10000000000000000\)\s+tether-system/tether-shard-1\s+-\s+-\s+`))
	for _, ns := range []string{"payments", "search", "research-lab"} {
		g.Expect(out).To(MatchRegexp(`(?m)^` + ns + `\s+` + shard.Hash(ns) + `\s+` + shard.Of(ns, 2).String() + `\s+`))
	}
	g.Expect(out).To(MatchRegexp(`(?m)^payments\s+\S+\s+\S+\s+2$`))

	_, err = shardCount(append(leases, shardLease{Shard: shard.Shard{Index: 0, Count: 3}, namespace: "x", name: "tether-shard-0"}))
	g.Expect(err).To(MatchError(ContainSubstring("disagree on the shard count")))
	_, err = shardCount(nil)
	g.Expect(err).To(MatchError(ContainSubstring("no shard Leases found")))
}
