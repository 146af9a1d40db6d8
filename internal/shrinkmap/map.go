/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package shrinkmap gives a map's memory back as it empties. A Go map never
// shrinks: once it held 10,000 Delegations it keeps the table of 10,000
// after they are all gone. The operator keeps several maps keyed by
// Delegation; after a churn each would hold on to its largest size.
package shrinkmap

import "maps"

// minRebuild is the size below which a map is never rebuilt: its table is
// too small to matter.
const minRebuild = 256

// Delete removes k from m and returns the map to keep: m itself, or a copy
// at its current size once deletes left m at a quarter of the most entries
// seen since the last copy. peak is that most, kept by the caller beside
// the map (zero to start); it is noted at each Delete, so the callers of a
// map need not touch it where they insert. A copy moves len entries after
// at least 3×len deletes: each delete costs O(1) amortised.
func Delete[M ~map[K]V, K comparable, V any](m M, k K, peak *int) M {
	*peak = max(*peak, len(m))
	delete(m, k)
	if *peak < minRebuild || len(m) > *peak/4 {
		return m
	}
	out := make(M, len(m))
	maps.Copy(out, m)
	*peak = len(out)
	return out
}
