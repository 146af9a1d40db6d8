/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package shard splits the operator's work by namespace: shard i of N owns
// the namespaces whose FNV-1a-64 hash falls in the i-th of N equal ranges
// of the hash space. The hash and the range test are the API server's own
// (KEP-5866, k8s.io/apimachinery/pkg/sharding), so a cache can ask a
// server with ShardedListAndWatch for exactly the shard's objects, and
// filter the same way itself where the server ignores the selector.
//
// The namespace is the unit because everything a Delegation touches lives
// in its namespace: its tree, its Agent, its Secrets and Events. Cascades,
// budgets and admission never cross shards.
package shard

import (
	"fmt"
	"math/bits"

	"k8s.io/apimachinery/pkg/sharding"
)

// NamespaceField is the field path the shards hash.
const NamespaceField = "object.metadata.namespace"

// hashSpaceEnd is 2^64, the exclusive end of the last range, written as
// the API server's parser wants it.
const hashSpaceEnd = "0x10000000000000000"

// Shard is shard Index of Count (0 <= Index < Count).
type Shard struct {
	Index, Count int
}

// Validate says what is wrong with a shard number, if anything.
func (s Shard) Validate() error {
	if s.Count < 1 {
		return fmt.Errorf("--shards must be at least 1, not %d", s.Count)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("--shard must be in [0, %d), not %d", s.Count, s.Index)
	}
	return nil
}

// String is "i/N", as the operator's logs print it.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Range is the shard's half-open hash range [start, end) as 0x-prefixed
// hex strings: start of shard i is floor(i * 2^64 / N).
func (s Shard) Range() (start, end string) {
	return bound(s.Index, s.Count), bound(s.Index+1, s.Count)
}

func bound(i, n int) string {
	if i >= n {
		return hashSpaceEnd
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(n)) // i * 2^64 / n, i < n
	return fmt.Sprintf("0x%016x", q)
}

// Selector is the shard's selector over namespaces, the value of
// ListOptions.ShardSelector.
func (s Shard) Selector() sharding.Selector {
	start, end := s.Range()
	return sharding.NewSelector(sharding.ShardRangeRequirement{Key: NamespaceField, Start: start, End: end})
}

// Owns reports whether the namespace belongs to the shard.
func (s Shard) Owns(namespace string) bool {
	start, end := s.Range()
	h := Hash(namespace)
	return !sharding.HexLess(h, start) && sharding.HexLess(h, end)
}

// Hash is the API server's hash of a field value: FNV-1a-64 as 0x-prefixed
// 16-digit hex.
func Hash(value string) string { return "0x" + sharding.HashField(value) }

// Of is the shard of N that owns the namespace.
func Of(namespace string, n int) Shard {
	for i := range n {
		if s := (Shard{Index: i, Count: n}); s.Owns(namespace) {
			return s
		}
	}
	return Shard{Index: n - 1, Count: n} // unreachable: the ranges cover the space
}
