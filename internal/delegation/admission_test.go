/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestAdmit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	waiting := func(uid string, at time.Duration) Contender {
		return Contender{UID: uid, Name: "d-" + uid, Created: t0.Add(at)}
	}
	started := func(uid string) Contender { c := waiting(uid, 0); c.Started = true; return c }
	cases := []struct {
		name    string
		uid     string
		limit   int
		all     []Contender
		admit   bool
		running int
	}{
		{name: "a free place", uid: "a", limit: 1, all: []Contender{waiting("a", 0)}, admit: true},
		{name: "every place held", uid: "c", limit: 2, all: []Contender{started("a"), started("b"), waiting("c", 0)}, running: 2},
		{name: "the oldest waiting goes first", uid: "new", limit: 2,
			all: []Contender{started("a"), waiting("new", time.Second), waiting("old", 0)}, running: 1},
		{name: "the oldest waiting is admitted", uid: "old", limit: 2,
			all: []Contender{started("a"), waiting("new", time.Second), waiting("old", 0)}, admit: true, running: 1},
		{name: "same creation time: by name", uid: "b", limit: 1, all: []Contender{waiting("b", 0), waiting("a", 0)}},
		{name: "admitted but not shown started holds its place", uid: "b", limit: 1,
			all: []Contender{{UID: "a", Admitted: true}, waiting("b", 0)}, running: 1},
		{name: "asking again, it keeps the place an earlier pass let it have", uid: "a", limit: 1,
			all: []Contender{{UID: "a", Admitted: true, Created: t0.Add(time.Second)}, waiting("b", 0)}, admit: true, running: 1},
		{name: "a settled or deleting one frees its place", uid: "b", limit: 1,
			all: []Contender{{UID: "a", Started: true, Done: true}, waiting("b", 0)}, admit: true},
		{name: "an adoption takes no place in the queue", uid: "b", limit: 1,
			all: []Contender{{UID: "a", Adopts: true, Created: t0.Add(-time.Hour)}, waiting("b", 0)}, admit: true},
		{name: "over the limit (it was lowered)", uid: "c", limit: 1, all: []Contender{started("a"), started("b"), waiting("c", 0)}, running: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			admit, running := Admit(c.uid, c.limit, c.all)
			g.Expect(admit).To(Equal(c.admit))
			g.Expect(running).To(Equal(c.running))
		})
	}
}

func TestHeldByPass(t *testing.T) {
	held := Contender{UID: "held", Admitted: true}
	for _, c := range []struct {
		name  string
		lines [][]Contender
		want  bool
	}{
		{name: "no line"},
		{name: "started places are taken for good", lines: [][]Contender{{{UID: "a", Started: true}, {UID: "me"}}}},
		{name: "a place a pass holds", lines: [][]Contender{{{UID: "a", Started: true}, held, {UID: "me"}}}, want: true},
		{name: "in the siblings' line", lines: [][]Contender{{{UID: "a", Started: true}}, {held}}, want: true},
		{name: "its own place is not another's", lines: [][]Contender{{{UID: "me", Admitted: true}}}},
		{name: "waiting ones hold nothing", lines: [][]Contender{{{UID: "old"}, {UID: "me"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(HeldByPass("me", c.lines...)).To(Equal(c.want))
		})
	}
}
