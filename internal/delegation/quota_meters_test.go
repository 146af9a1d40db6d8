/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

var meterT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func tokensPerDay(limit int64) v1alpha1.MeterLimit {
	return v1alpha1.MeterLimit{Name: "tokens", Limit: limit, Window: metav1.Duration{Duration: 24 * time.Hour}}
}

func meterCharge(uid string, ago time.Duration, amount int64, settled bool) v1alpha1.MeterCharge {
	c := v1alpha1.MeterCharge{UID: uid, At: metav1.NewTime(meterT0.Add(-ago)), Amount: amount, Settled: settled}
	if uid != "" {
		c.Root = "r-" + uid
	}
	return c
}

func tokensLedger(charges ...v1alpha1.MeterCharge) []v1alpha1.MeterUse {
	return []v1alpha1.MeterUse{{Name: "tokens", Charges: charges}}
}

func rootAsk(uid string, created time.Duration, budget v1alpha1.Meters) *RootAsk {
	return &RootAsk{UID: uid, Name: "r-" + uid, Created: meterT0.Add(created), Budget: budget}
}

func TestMeterGate(t *testing.T) {
	team := func(limit int64, ledger []v1alpha1.MeterUse) []Quota {
		return []Quota{{Name: "team", Hard: v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{tokensPerDay(limit)}}, Meters: ledger}}
	}
	tokens := func(n int64) v1alpha1.Meters { return v1alpha1.Meters{"tokens": n} }
	full := make([]v1alpha1.MeterCharge, v1alpha1.MaxMeterRoots)
	for i := range full {
		full[i] = meterCharge(fmt.Sprint("f", i), time.Minute, 1, false)
	}
	cases := []struct {
		name    string
		quotas  []Quota
		ask     QuotaAsk
		msg     string // empty: it starts
		retryAt time.Time
	}{
		{name: "a child is not counted", quotas: team(10, tokensLedger(meterCharge("x", time.Hour, 10, false))),
			ask: QuotaAsk{UID: "a"}},
		{name: "room in the window", quotas: team(100, tokensLedger(meterCharge("x", time.Hour, 60, true))),
			ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(40))}},
		{name: "no budget for the meter", quotas: team(100, nil), ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, nil)},
			msg: `DelegationQuota "team": tokens is limited per 24h; a root Delegation needs spec.budget.meters.tokens to start`},
		{name: "a budget above the limit never fits", quotas: team(100, nil), ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(101))},
			msg: `DelegationQuota "team": tokens budget 101 exceeds 100 per 24h; it cannot start under this quota`},
		{name: "window full: waits until the oldest settled entry leaves",
			quotas: team(100, tokensLedger(meterCharge("x", 20*time.Hour, 30, true), meterCharge("y", 2*time.Hour, 50, true), meterCharge("z", time.Hour, 10, false))),
			ask:    QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(20)), Now: meterT0},
			msg:    `DelegationQuota "team": tokens 90/100 in 24h, budget 20; waiting in creation order`, retryAt: meterT0.Add(4 * time.Hour)},
		{name: "a settled entry past its window does not count",
			quotas: team(100, tokensLedger(meterCharge("x", 25*time.Hour, 90, true))), ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(20)), Now: meterT0}},
		{name: "a root in flight counts however old",
			quotas: team(100, tokensLedger(meterCharge("x", 25*time.Hour, 90, false))), ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(20)), Now: meterT0},
			msg: `DelegationQuota "team": tokens 90/100 in 24h, budget 20; waiting in creation order`},
		{name: "a root holding its entry goes on (a new attempt)",
			quotas: team(100, tokensLedger(meterCharge("x", time.Hour, 90, false), meterCharge("a", time.Hour, 20, false))),
			ask:    QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(20)), Now: meterT0}},
		{name: "an older waiting root goes first",
			quotas: team(100, tokensLedger(meterCharge("x", time.Hour, 50, true))),
			ask: QuotaAsk{UID: "b", Root: rootAsk("b", 0, tokens(20)), Now: meterT0,
				WaitingRoots: []RootAsk{*rootAsk("a", -time.Second, tokens(40)), *rootAsk("c", time.Second, tokens(40))}},
			msg:     `DelegationQuota "team": tokens 50/100 in 24h, budget 20, 40 asked by older roots; waiting in creation order`,
			retryAt: meterT0.Add(23 * time.Hour)},
		{name: "an older root that can never fit holds no one up",
			quotas: team(100, tokensLedger(meterCharge("x", time.Hour, 50, true))),
			ask: QuotaAsk{UID: "b", Root: rootAsk("b", 0, tokens(20)), Now: meterT0,
				WaitingRoots: []RootAsk{*rootAsk("a", -time.Second, tokens(400)), *rootAsk("n", -time.Second, nil)}}},
		{name: "the ledger holds the most roots in flight it keeps",
			quotas: team(1_000_000, tokensLedger(full...)), ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, tokens(1)), Now: meterT0},
			msg: `DelegationQuota "team": tokens: the ledger holds 500 roots in flight, the most it keeps; waiting for one to settle`},
		{name: "quotas in name order: the first exceeded is named",
			quotas: append(team(10, tokensLedger(meterCharge("x", time.Hour, 10, true))),
				Quota{Name: "a-dollars", Hard: v1alpha1.QuotaLimits{Meters: []v1alpha1.MeterLimit{
					{Name: "dollars", Limit: 5, Window: metav1.Duration{Duration: 90 * time.Minute}}}}}),
			ask: QuotaAsk{UID: "a", Root: rootAsk("a", 0, v1alpha1.Meters{"tokens": 1, "dollars": 6}), Now: meterT0},
			msg: `DelegationQuota "a-dollars": dollars budget 6 exceeds 5 per 1h30m; it cannot start under this quota`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			rec, ok, retryAt := MeterGate(c.quotas, c.ask)
			g.Expect(ok).To(Equal(c.msg == ""))
			if c.msg != "" {
				g.Expect(rec.Phase).To(Equal(v1alpha1.PhasePending), "never Failed")
				g.Expect(rec.Outcome.Reason).To(Equal(ReasonQuotaExceeded))
				g.Expect(rec.Outcome.Message).To(Equal(c.msg))
			}
			g.Expect(retryAt).To(Equal(c.retryAt))
		})
	}
}

func TestMeterLedger(t *testing.T) {
	g := NewWithT(t)
	limits := []v1alpha1.MeterLimit{tokensPerDay(100)}
	now := meterT0.Add(300 * time.Millisecond)

	// Charged once, at its start (whole seconds, as the API server keeps it).
	out, changed := ChargeMeters(nil, limits, *rootAsk("a", 0, v1alpha1.Meters{"tokens": 40}), now)
	g.Expect(changed).To(BeTrue())
	g.Expect(out[0].Charges).To(Equal([]v1alpha1.MeterCharge{meterCharge("a", 0, 40, false)}))
	g.Expect(out[0].Used).To(Equal(int64(40)))
	again, changed := ChargeMeters(out, limits, *rootAsk("a", 0, v1alpha1.Meters{"tokens": 40}), now.Add(time.Minute))
	g.Expect(changed).To(BeFalse(), "a second charge (a new attempt, a pass after a restart) changes nothing")
	g.Expect(again).To(Equal(out))
	// A budget changed before the send takes the entry's amount, at its start.
	out, changed = ChargeMeters(out, limits, *rootAsk("a", 0, v1alpha1.Meters{"tokens": 30}), now.Add(time.Minute))
	g.Expect(changed).To(BeTrue())
	g.Expect(out[0].Charges).To(Equal([]v1alpha1.MeterCharge{meterCharge("a", 0, 30, false)}))

	// Settling lowers it to the charge, once.
	held := v1alpha1.Meters{}
	out, changed = SettleMeters(out, limits, "a", now, func(h v1alpha1.Meters) v1alpha1.Meters { held = h; return v1alpha1.Meters{"tokens": 7} })
	g.Expect(changed).To(BeTrue())
	g.Expect(held).To(Equal(v1alpha1.Meters{"tokens": 30}))
	g.Expect(out[0].Charges).To(Equal([]v1alpha1.MeterCharge{meterCharge("a", 0, 7, true)}))
	g.Expect(out[0].Used).To(Equal(int64(7)))
	g.Expect(HoldsMeters(out, "a")).To(BeFalse())
	_, changed = SettleMeters(out, limits, "a", now, func(v1alpha1.Meters) v1alpha1.Meters { return v1alpha1.Meters{"tokens": 1} })
	g.Expect(changed).To(BeFalse(), "settled already")
	out, changed = ChargeMeters(out, limits, *rootAsk("a", 0, v1alpha1.Meters{"tokens": 30}), now)
	g.Expect(changed).To(BeFalse(), "a settled entry is never charged again")
	g.Expect(out[0].Charges[0].Amount).To(Equal(int64(7)))

	// A charge above what was held is held to it.
	out, _ = ChargeMeters(out, limits, *rootAsk("b", 0, v1alpha1.Meters{"tokens": 5}), now)
	out, _ = SettleMeters(out, limits, "b", now, func(v1alpha1.Meters) v1alpha1.Meters { return v1alpha1.Meters{"tokens": 1 << 40} })
	g.Expect(out[0].Used).To(Equal(int64(12)))

	// The entries leave one window after their start; the next expiry is told.
	g.Expect(NextMeterExpiry(out, limits, now)).To(Equal(meterT0.Add(24 * time.Hour)))
	pruned, changed := PruneMeters(out, limits, meterT0.Add(24*time.Hour))
	g.Expect(changed).To(BeTrue())
	g.Expect(pruned).To(Equal([]v1alpha1.MeterUse{{Name: "tokens"}}))
	g.Expect(NextMeterExpiry(pruned, limits, now)).To(BeZero())
	// A meter no longer limited loses its ledger.
	pruned, changed = PruneMeters(out, nil, now)
	g.Expect(changed).To(BeTrue())
	g.Expect(pruned).To(BeNil())
}

// A full ledger folds its settled roots into sums per slice of the window
// (24h/50, so 28.8 minutes): bounded, and never counted shorter than a window.
func TestMeterLedgerFoldsSettledRootsWhenFull(t *testing.T) {
	g := NewWithT(t)
	const slice = 1728 * time.Second
	limits := []v1alpha1.MeterLimit{tokensPerDay(1 << 40)}
	var led []v1alpha1.MeterUse
	n := v1alpha1.MaxMeterRoots + v1alpha1.MeterBuckets
	base := meterT0.Truncate(slice) // the start of a slice
	for i := range n {
		at := base.Add(time.Duration(i) * 2 * time.Minute)
		led, _ = ChargeMeters(led, limits, *rootAsk(fmt.Sprint("s", i), 0, v1alpha1.Meters{"tokens": 1}), at)
		if i%10 != 0 { // one in ten stays in flight
			led, _ = SettleMeters(led, limits, fmt.Sprint("s", i), at, func(h v1alpha1.Meters) v1alpha1.Meters { return h })
		}
	}
	g.Expect(led[0].Charges).To(HaveLen(n))
	// The window's far edge falls inside the first slice, 100 s after its
	// start: the roots settled in the rest of that slice still count.
	edge := base.Add(100 * time.Second)
	now := edge.Add(24 * time.Hour)
	var exact int64 = 1 // the new root
	for i := range n {
		if at := base.Add(time.Duration(i) * 2 * time.Minute); i%10 == 0 || at.After(edge) {
			exact++
		}
	}
	led, _ = ChargeMeters(led, limits, *rootAsk("new", 0, v1alpha1.Meters{"tokens": 1}), now)
	charges := led[0].Charges
	g.Expect(len(charges)).To(BeNumerically("<=", n/10+1+v1alpha1.MeterBuckets+1), "settled roots are folded")
	var inFlight int
	for _, c := range charges {
		if !c.Settled {
			inFlight++
			g.Expect(c.UID).NotTo(BeEmpty())
		} else {
			g.Expect(c.UID).To(BeEmpty())
			g.Expect(c.At.Time).To(Equal(c.At.Truncate(slice)), "a sum is at the end of its 28.8-minute slice")
		}
	}
	g.Expect(inFlight).To(Equal(n/10+1), "roots in flight keep their entries")
	// Folding moves a root later, never earlier: every root of the window
	// still counts, and at most one slice's worth (14 roots) longer.
	used, _, _ := windowUse(&led[0], 24*time.Hour, now, "")
	g.Expect(used).To(BeNumerically(">=", exact))
	g.Expect(used).To(BeNumerically("<=", exact+14))
	g.Expect(led[0].Used).To(Equal(used))
}

func TestWindowString(t *testing.T) {
	g := NewWithT(t)
	for d, s := range map[time.Duration]string{
		24 * time.Hour: "24h", time.Minute: "1m", 90 * time.Minute: "1h30m", 720 * time.Hour: "720h",
		90 * time.Second: "1m30s", 10*time.Hour + 30*time.Second: "10h0m30s",
	} {
		g.Expect(WindowString(d)).To(Equal(s))
	}
}
