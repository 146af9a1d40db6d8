/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shrinkmap

import (
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDeleteKeepsTheOtherEntries(t *testing.T) {
	g := NewWithT(t)
	var nilMap map[int]int
	peak := 0
	g.Expect(Delete(nilMap, 1, &peak)).To(BeEmpty(), "a delete from a nil map is fine")

	m := map[int]int{}
	for i := range 1000 {
		m[i] = i
	}
	for i := range 990 {
		m = Delete(m, i, &peak)
	}
	g.Expect(m).To(HaveLen(10))
	for i := 990; i < 1000; i++ {
		g.Expect(m).To(HaveKeyWithValue(i, i))
	}
	g.Expect(peak).To(BeNumerically("<", 1000), "the map was copied at its smaller size")
}

// The point of the package: after 100,000 entries came and went, the map
// holds about what an empty one holds, where a plain map keeps its table.
func TestDeleteGivesTheTableBack(t *testing.T) {
	g := NewWithT(t)
	const n = 100_000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()

	plain := map[int]int{}
	for i := range n {
		plain[i] = i
	}
	for i := range n {
		delete(plain, i)
	}
	plainHeap := heap()
	runtime.KeepAlive(plain)

	shrinking, peak := map[int]int{}, 0
	for i := range n {
		shrinking[i] = i
	}
	for i := range n {
		shrinking = Delete(shrinking, i, &peak)
	}
	shrinkingHeap := heap()
	runtime.KeepAlive(shrinking)
	t.Logf("heap after %d entries came and went: plain map %d KiB, with Delete %d KiB (base %d KiB)",
		n, plainHeap>>10, shrinkingHeap>>10, base>>10)
	g.Expect(plainHeap).To(BeNumerically(">", base+1<<20), "a plain map keeps its table")
	g.Expect(shrinkingHeap).To(BeNumerically("<", base+256<<10))
}
