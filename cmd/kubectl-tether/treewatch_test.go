/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestLiveTreeRedrawsInPlaceOnATerminal(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	e := &env{ns: "default", stdout: &out, now: now}
	l := &liveTree{e: e, name: "search", inPlace: true, clock: func() time.Time { return now }}
	items := researchTree()

	l.update(items)
	first := out.String()
	g.Expect(first).To(HavePrefix(cursorHome + eraseBelow + cursorHome + `Watching tree "search"; `))
	g.Expect(first).To(ContainSubstring("fetch   Failed"))
	g.Expect(first).To(HaveSuffix(eraseLine+"\n"+eraseBelow), "every line cleared to its end, then what was below")

	out.Reset()
	l.update(items) // the same tree at the same moment: nothing to redraw
	g.Expect(out.String()).To(BeEmpty())

	items[3].Status.Phase = v1alpha1.PhaseRunning // fetch runs again
	l.update(items)
	g.Expect(out.String()).To(HavePrefix(cursorHome+`Watching tree "search"; `), "later frames overwrite the first")
	g.Expect(out.String()).NotTo(ContainSubstring(eraseBelow+cursorHome), "the screen is not cleared again")
	g.Expect(out.String()).To(ContainSubstring("└── fetch   Running"))

	out.Reset()
	l.finish()
	g.Expect(out.String()).To(Equal(eraseBelow))
}

func TestLiveTreePrintsFramesOffATerminal(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	e := &env{ns: "default", stdout: &out, now: now}
	l := &liveTree{e: e, name: "search", clock: func() time.Time { return now }}
	items := researchTree()
	l.update(items)
	l.update(items) // nothing changed: no frame
	items[3].Status.Phase = v1alpha1.PhaseRunning
	l.update(items)
	frames := strings.Split(out.String(), "\n\n")
	g.Expect(frames).To(HaveLen(2))
	g.Expect(frames[0]).To(HavePrefix("Watching tree \"search\"\nNAME"))
	g.Expect(frames[1]).To(ContainSubstring("└── fetch   Running"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))

	l = &liveTree{e: e, name: "nope", clock: func() time.Time { return now }}
	out.Reset()
	l.update(items)
	g.Expect(out.String()).To(BeEmpty(), "a missing tree is the watch's error to report, not a frame")
}
