/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"fmt"
	"hash/fnv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The hash is FNV-1a-64 of the namespace name; the values are the ones the
// API server was seen to use (ns-b and ns-c fell in 0x4a8288…-0x4a828b…).
func TestHashIsFNV1a64OfTheName(t *testing.T) {
	g := NewWithT(t)
	for _, ns := range []string{"", "default", "ns-b", "ns-c", "team-payments"} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(ns))
		g.Expect(Hash(ns)).To(Equal(fmt.Sprintf("0x%016x", h.Sum64())), ns)
	}
	g.Expect(Hash("ns-b")).To(HavePrefix("0x4a828aba"))
	g.Expect(Hash("ns-c")).To(HavePrefix("0x4a8289ba"))
}

func TestRangesSplitTheHashSpaceEvenly(t *testing.T) {
	g := NewWithT(t)
	start, end := Shard{0, 1}.Range()
	g.Expect([]string{start, end}).To(Equal([]string{"0x0000000000000000", "0x10000000000000000"}))

	got := make([][2]string, 0, 3)
	for i := range 3 {
		s, e := Shard{i, 3}.Range()
		got = append(got, [2]string{s, e})
	}
	g.Expect(got).To(Equal([][2]string{
		{"0x0000000000000000", "0x5555555555555555"},
		{"0x5555555555555555", "0xaaaaaaaaaaaaaaaa"},
		{"0xaaaaaaaaaaaaaaaa", "0x10000000000000000"},
	}))
	g.Expect(Shard{1, 3}.Selector().String()).To(Equal(
		"shardRange(object.metadata.namespace, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"))
}

// Every namespace has exactly one owner, and Owns agrees with the API
// server's own matcher (the Selector).
func TestEveryNamespaceHasOneOwner(t *testing.T) {
	g := NewWithT(t)
	for _, n := range []int{1, 2, 3, 7} {
		for i := range 200 {
			ns := fmt.Sprintf("tenant-%d", i)
			owners := 0
			for j := range n {
				s := Shard{j, n}
				obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
				matched, err := s.Selector().Matches(obj)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.Owns(ns)).To(Equal(matched), "%s in %s", ns, s)
				if matched {
					owners++
					g.Expect(Of(ns, n)).To(Equal(s))
				}
			}
			g.Expect(owners).To(Equal(1), "%s over %d shards", ns, n)
		}
	}
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Shard{0, 1}.Validate()).To(Succeed())
	g.Expect(Shard{2, 3}.Validate()).To(Succeed())
	g.Expect(Shard{3, 3}.Validate()).To(MatchError(ContainSubstring("--shard must be in [0, 3)")))
	g.Expect(Shard{0, 0}.Validate()).To(MatchError(ContainSubstring("--shards must be at least 1")))
	g.Expect(Shard{-1, 2}.Validate()).To(HaveOccurred())
}
