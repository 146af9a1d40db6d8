/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestQuotaGate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	waiting := func(uid string, at time.Duration) Contender {
		return Contender{UID: uid, Name: "d-" + uid, Created: t0.Add(at)}
	}
	started := func(uid string) Contender { c := waiting(uid, -time.Hour); c.Started = true; return c }
	settledStarted := func(uid string) Contender { c := started(uid); c.Done = true; return c }
	inFlight := func(n int32) Quota { return Quota{Name: "team", Hard: v1alpha1.QuotaLimits{InFlight: ptr.To(n)}} }
	cases := []struct {
		name   string
		quotas []Quota
		ask    QuotaAsk
		starts bool
		msg    string
		// static: a limit no usage changes (OverQuotaLimit).
		static bool
		// siblings: its parent's started children hold it
		// (ChildrenPerParentExceeded).
		siblings bool
	}{
		{name: "no quota", ask: QuotaAsk{UID: "a", InFlight: []Contender{started("x"), waiting("a", 0)}}, starts: true},
		{name: "room in flight", quotas: []Quota{inFlight(2)},
			ask: QuotaAsk{UID: "a", InFlight: []Contender{started("x"), waiting("a", 0)}}, starts: true},
		{name: "in flight full", quotas: []Quota{inFlight(2)},
			ask: QuotaAsk{UID: "a", InFlight: []Contender{started("x"), started("y"), waiting("a", 0)}},
			msg: `DelegationQuota "team": inFlight 2/2; waiting in creation order`},
		{name: "a settled one frees its place", quotas: []Quota{inFlight(1)},
			ask: QuotaAsk{UID: "a", InFlight: []Contender{settledStarted("x"), waiting("a", 0)}}, starts: true},
		{name: "the oldest waiting takes the freed place", quotas: []Quota{inFlight(2)},
			ask: QuotaAsk{UID: "new", InFlight: []Contender{started("x"), waiting("new", time.Second), waiting("old", 0)}},
			msg: `DelegationQuota "team": inFlight 1/2; waiting in creation order`},
		{name: "zero in flight holds everything", quotas: []Quota{inFlight(0)},
			ask: QuotaAsk{UID: "a", InFlight: []Contender{waiting("a", 0)}},
			msg: `DelegationQuota "team": inFlight 0/0; waiting in creation order`},
		{name: "the tightest of several applies", quotas: []Quota{{Name: "wide", Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](10)}}, inFlight(1)},
			ask: QuotaAsk{UID: "a", InFlight: []Contender{started("x"), waiting("a", 0)}},
			msg: `DelegationQuota "team": inFlight 1/1; waiting in creation order`},
		{name: "too deep never starts", quotas: []Quota{{Name: "team", Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](2)}}},
			ask: QuotaAsk{UID: "a", Depth: 3}, static: true,
			msg: `DelegationQuota "team": depth 3 exceeds 2; it cannot start under this quota`},
		{name: "at the depth limit starts", quotas: []Quota{{Name: "team", Hard: v1alpha1.QuotaLimits{Depth: ptr.To[int32](2)}}},
			ask: QuotaAsk{UID: "a", Depth: 2}, starts: true},
		{name: "children per parent: settled started children still count",
			quotas: []Quota{{Name: "fanout", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](2)}}},
			ask: QuotaAsk{UID: "c", Siblings: []Contender{
				{UID: "a", Name: "a", Started: true}, {UID: "b", Name: "b", Started: true}, waiting("c", 0)}}, siblings: true,
			msg: `DelegationQuota "fanout": childrenPerParent 2/2; waiting in creation order for a started sibling to be deleted`},
		{name: "children per parent: the siblings' limit goes before any quota's inFlight",
			quotas: []Quota{{Name: "a-namespace", Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](1)}},
				{Name: "b-tree", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](1)}}},
			ask: QuotaAsk{UID: "c", InFlight: []Contender{started("x"), waiting("c", 0)},
				Siblings: []Contender{started("a"), waiting("c", 0)}}, siblings: true,
			msg: `DelegationQuota "b-tree": childrenPerParent 1/1; waiting in creation order for a started sibling to be deleted`},
		{name: "children per parent: an older sibling waiting for inFlight is ahead",
			quotas: []Quota{{Name: "fanout", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](2)}}},
			ask:    QuotaAsk{UID: "new", Siblings: []Contender{started("a"), waiting("old", 0), waiting("new", time.Second)}}, siblings: true,
			msg: `DelegationQuota "fanout": childrenPerParent 1/2; waiting in creation order for a started sibling to be deleted`},
		{name: "children per parent: room goes to the oldest child",
			quotas: []Quota{{Name: "fanout", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](2)}}},
			ask:    QuotaAsk{UID: "old", Siblings: []Contender{started("a"), waiting("new", time.Second), waiting("old", 0)}}, starts: true},
		{name: "children per parent: a started child's next attempt keeps its place",
			quotas: []Quota{{Name: "fanout", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](2)}}},
			ask:    QuotaAsk{UID: "b", Siblings: []Contender{started("a"), started("b"), waiting("c", -2*time.Hour)}}, starts: true},
		{name: "children per parent does not hold a root",
			quotas: []Quota{{Name: "fanout", Hard: v1alpha1.QuotaLimits{ChildrenPerParent: ptr.To[int32](0)}}},
			ask:    QuotaAsk{UID: "a"}, starts: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			rec, starts := QuotaGate(c.quotas, c.ask)
			g.Expect(starts).To(Equal(c.starts))
			if c.starts {
				g.Expect(rec).To(Equal(Record{}))
				return
			}
			g.Expect(rec.Phase).To(Equal(v1alpha1.PhasePending), "over quota waits, never fails")
			reason := ReasonQuotaExceeded
			switch {
			case c.static:
				reason = ReasonOverQuotaLimit
			case c.siblings:
				reason = ReasonChildrenPerParentExceeded
			}
			g.Expect(rec.Outcome.Reason).To(Equal(reason))
			g.Expect(rec.Outcome.Message).To(Equal(c.msg))
		})
	}
}

func TestWaitsInLine(t *testing.T) {
	for _, c := range []struct {
		reason                 string
		namespaceLine, sibling bool
	}{
		{reason: ReasonQuotaExceeded, namespaceLine: true, sibling: true},
		// Its siblings may hold it for good: it must not hold up the
		// namespace's younger Delegations.
		{reason: ReasonChildrenPerParentExceeded, sibling: true},
		{reason: ReasonOverQuotaLimit},
		{reason: ReasonAwaitingApproval},
		{reason: ReasonAgentAtCapacity},
		{reason: ReasonBudgetExhausted},
		{reason: ""},
	} {
		t.Run(c.reason, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(WaitsInLine(NamespaceLine, c.reason)).To(Equal(c.namespaceLine), "inFlight line")
			g.Expect(WaitsInLine(SiblingLine, c.reason)).To(Equal(c.sibling), "childrenPerParent line")
		})
	}
}

func TestQuotaLimitsGate(t *testing.T) {
	limits := func(name string, h v1alpha1.QuotaLimits) Quota { return Quota{Name: name, Hard: h} }
	tokens50k := limits("team", v1alpha1.QuotaLimits{MaxBudget: map[string]int64{"tokens": 50000, "usd-cents": 100}})
	cases := []struct {
		name   string
		quotas []Quota
		ask    LimitsAsk
		msg    string
	}{
		{name: "no quota", ask: LimitsAsk{Meters: map[string]int64{"tokens": 1 << 40}, Attempts: 10}},
		{name: "at the limit", quotas: []Quota{tokens50k}, ask: LimitsAsk{Meters: map[string]int64{"tokens": 50000}}},
		{name: "over the limit", quotas: []Quota{tokens50k}, ask: LimitsAsk{Meters: map[string]int64{"tokens": 80000}},
			msg: `DelegationQuota "team" allows at most 50000 tokens per Delegation; this one asks 80000: ` +
				"lower spec.budget.meters.tokens or raise the quota's spec.hard.maxBudget"},
		{name: "meters are checked by name, the first over named", quotas: []Quota{tokens50k},
			ask: LimitsAsk{Meters: map[string]int64{"tokens": 90000, "usd-cents": 101}},
			msg: `DelegationQuota "team" allows at most 50000 tokens per Delegation; this one asks 90000: ` +
				"lower spec.budget.meters.tokens or raise the quota's spec.hard.maxBudget"},
		{name: "a meter not asked for is not limited", quotas: []Quota{tokens50k}, ask: LimitsAsk{Meters: map[string]int64{"calls": 1 << 40}}},
		{name: "no budget at all", quotas: []Quota{tokens50k}},
		{name: "attempts over", quotas: []Quota{limits("retries", v1alpha1.QuotaLimits{MaxAttempts: ptr.To[int32](3)})},
			ask: LimitsAsk{Attempts: 5},
			msg: `DelegationQuota "retries" allows at most 3 attempts per Delegation; this one asks 5: ` +
				"lower spec.retry.maxAttempts or raise the quota's spec.hard.maxAttempts"},
		{name: "attempts at the limit", quotas: []Quota{limits("retries", v1alpha1.QuotaLimits{MaxAttempts: ptr.To[int32](3)})},
			ask: LimitsAsk{Attempts: 3}},
		{name: "every quota applies, the first by name reported",
			quotas: []Quota{limits("b", v1alpha1.QuotaLimits{MaxAttempts: ptr.To[int32](1)}),
				limits("a", v1alpha1.QuotaLimits{MaxAttempts: ptr.To[int32](2)})},
			ask: LimitsAsk{Attempts: 4},
			msg: `DelegationQuota "a" allows at most 2 attempts per Delegation; this one asks 4: ` +
				"lower spec.retry.maxAttempts or raise the quota's spec.hard.maxAttempts"},
		{name: "usage limits are not static ones", quotas: []Quota{inFlightZero()}, ask: LimitsAsk{Attempts: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			rec, ok := QuotaLimitsGate(c.quotas, c.ask)
			g.Expect(ok).To(Equal(c.msg == ""))
			if c.msg == "" {
				g.Expect(rec).To(Equal(Record{}))
				return
			}
			g.Expect(rec.Phase).To(Equal(v1alpha1.PhasePending), "raising the quota lets it start")
			g.Expect(rec.Outcome.Reason).To(Equal(ReasonOverQuotaLimit))
			g.Expect(rec.Outcome.Message).To(Equal(c.msg))
		})
	}
}

func inFlightZero() Quota {
	return Quota{Name: "closed", Hard: v1alpha1.QuotaLimits{InFlight: ptr.To[int32](0), Depth: ptr.To[int32](0)}}
}

func TestQuotaTurn(t *testing.T) {
	g := NewWithT(t)
	limits := func(inFlight, children *int32) Quota {
		return Quota{Hard: v1alpha1.QuotaLimits{InFlight: inFlight, ChildrenPerParent: children}}
	}
	turn := func(quotas ...Quota) []any {
		n, limited := QuotaTurn(quotas)
		return []any{n, limited}
	}
	g.Expect(turn()).To(Equal([]any{0, false}))
	g.Expect(turn(limits(nil, ptr.To[int32](3)))).To(Equal([]any{0, false}), "no inFlight limit")
	g.Expect(turn(limits(ptr.To[int32](2), nil), limits(ptr.To[int32](5), nil))).To(Equal([]any{5, true}), "the widest window of the quotas")
	g.Expect(turn(limits(ptr.To[int32](0), nil))).To(Equal([]any{0, true}), "inFlight 0 lets none start")
}
