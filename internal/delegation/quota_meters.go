/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Meters per rolling window. A root's budget bounds its whole tree, so only
// roots count: from its start a root holds its budget for the meter in the
// quota's ledger (an entry keyed by its uid, written before it is sent,
// like a child's reservation in its parent's ledger), and when it settles
// the entry becomes what it was charged (Charge), so the window gets back
// what the root did not use. A settled entry counts until one window after
// the root's start; an entry in flight counts until it settles. Entries are
// never derived from the roots that exist, so a deleted root's charge stays
// until its window passes, and a restarted operator finds the ledger as it
// was: nothing is counted twice.

// RootAsk is a root Delegation as the meter check sees it.
type RootAsk struct {
	UID     string
	Name    string
	Created time.Time
	// Budget is the root's spec.budget.meters (nil without a budget).
	Budget v1alpha1.Meters
}

func (a RootAsk) before(b RootAsk) bool {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c < 0
	}
	return a.Name < b.Name
}

// MeterGate decides whether a root may start now under the namespace's
// meter limits (Hard.Meters); a child always may. A root over a limit, or
// without a budget for a limited meter, waits Pending (QuotaExceeded);
// retryAt, when set, is when the window next gives room back. Roots start
// in creation order: a root waiting for a quota that could start under
// every limit is served before a younger one.
func MeterGate(quotas []Quota, ask QuotaAsk) (rec Record, ok bool, retryAt time.Time) {
	if ask.Root == nil {
		return Record{}, true, time.Time{}
	}
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	var ahead []RootAsk
	for _, w := range ask.WaitingRoots {
		if w.UID != ask.Root.UID && w.before(*ask.Root) && fitsEver(quotas, w.Budget) {
			ahead = append(ahead, w)
		}
	}
	for _, q := range quotas {
		for _, l := range q.Hard.Meters {
			if msg, at, fits := meterFits(l, ledgerOf(q.Meters, l.Name), *ask.Root, ahead, ask.Now); !fits {
				return quotaWait(q.Name, msg), false, at
			}
		}
	}
	return Record{}, true, time.Time{}
}

// meterFits checks one limit; when it does not fit, msg says why and at is
// when the window next gives room back (zero: only a settle does).
func meterFits(l v1alpha1.MeterLimit, led *v1alpha1.MeterUse, root RootAsk, ahead []RootAsk, now time.Time) (msg string, at time.Time, fits bool) {
	window := WindowString(l.Window.Duration)
	want, named := root.Budget[l.Name]
	switch {
	case !named:
		return fmt.Sprintf("%s is limited per %s; a root Delegation needs spec.budget.meters.%s to start", l.Name, window, l.Name), at, false
	case want > l.Limit:
		return fmt.Sprintf("%s budget %d exceeds %d per %s; it cannot start under this quota", l.Name, want, l.Limit, window), at, false
	}
	if held := chargeOf(led, root.UID); held != nil && !held.Settled && held.Amount >= want {
		return "", at, true // it holds its room already (a new attempt)
	}
	used, inFlight, next := windowUse(led, l.Window.Duration, now, root.UID)
	if chargeOf(led, root.UID) == nil && inFlight >= v1alpha1.MaxMeterRoots {
		return fmt.Sprintf("%s: the ledger holds %d roots in flight, the most it keeps; waiting for one to settle", l.Name, inFlight), at, false
	}
	var older int64
	for _, w := range ahead {
		if chargeOf(led, w.UID) == nil {
			older = addSat(older, w.Budget[l.Name])
		}
	}
	if addSat(addSat(used, older), want) <= l.Limit {
		return "", at, true
	}
	msg = fmt.Sprintf("%s %d/%d in %s, budget %d", l.Name, used, l.Limit, window, want)
	if older > 0 {
		msg += fmt.Sprintf(", %d asked by older roots", older)
	}
	return msg + "; waiting in creation order", next, false
}

// fitsEver: the budget names every limited meter within its limit, so the
// root can start once room frees (else it must not hold younger ones up).
func fitsEver(quotas []Quota, budget v1alpha1.Meters) bool {
	for _, q := range quotas {
		for _, l := range q.Hard.Meters {
			if n, ok := budget[l.Name]; !ok || n > l.Limit {
				return false
			}
		}
	}
	return true
}

// windowUse sums a ledger within the window at now, leaving out uid's entry:
// what it holds, how many roots are in flight, and when the next settled
// entry leaves the window.
func windowUse(led *v1alpha1.MeterUse, window time.Duration, now time.Time, uid string) (used int64, inFlight int, next time.Time) {
	if led == nil {
		return 0, 0, next
	}
	for _, c := range led.Charges {
		switch leaves := c.At.Add(window); {
		case uid != "" && c.UID == uid:
		case !c.Settled:
			used, inFlight = addSat(used, c.Amount), inFlight+1
		case now.Before(leaves):
			used = addSat(used, c.Amount)
			if next.IsZero() || leaves.Before(next) {
				next = leaves
			}
		}
	}
	return used, inFlight, next
}

// ChargeMeters records root's budget in the ledgers of limits, from now: an
// entry that exists keeps its start and takes the budget asked (a spec
// changed before the send); a settled one is left alone. It reports whether
// the ledgers changed; used is recomputed.
func ChargeMeters(ledgers []v1alpha1.MeterUse, limits []v1alpha1.MeterLimit, root RootAsk, now time.Time) ([]v1alpha1.MeterUse, bool) {
	out, changed := PruneMeters(ledgers, limits, now)
	for _, l := range limits {
		led := ledgerOf(out, l.Name)
		want := root.Budget[l.Name]
		switch c := chargeOf(led, root.UID); {
		case c == nil:
			if len(led.Charges) >= v1alpha1.MaxMeterRoots+v1alpha1.MeterBuckets {
				foldSettled(led, l.Window.Duration)
			}
			led.Charges = append(led.Charges, v1alpha1.MeterCharge{UID: root.UID, Root: root.Name,
				At: metav1.NewTime(now.Truncate(time.Second)), Amount: want})
		case c.Settled || c.Amount == want:
			continue
		default:
			c.Amount = want
		}
		changed = true
	}
	if changed {
		recountMeters(out, limits, now)
	}
	return out, changed
}

// SettleMeters turns uid's entries in flight into what it was charged:
// charge gets the budget the entries held and returns the charge (Charge,
// which lies within it). It reports false when no entry is in flight (it
// was settled already, or never counted), so it can run on every pass.
func SettleMeters(ledgers []v1alpha1.MeterUse, limits []v1alpha1.MeterLimit, uid string, now time.Time,
	charge func(held v1alpha1.Meters) v1alpha1.Meters) ([]v1alpha1.MeterUse, bool) {
	out, changed := PruneMeters(ledgers, limits, now)
	held := v1alpha1.Meters{}
	for i := range out {
		if c := chargeOf(&out[i], uid); c != nil && !c.Settled {
			held[out[i].Name] = c.Amount
		}
	}
	if len(held) == 0 {
		return out, changed
	}
	charged := charge(held)
	for i := range out {
		if c := chargeOf(&out[i], uid); c != nil && !c.Settled {
			c.Amount, c.Settled = min(max(charged[out[i].Name], 0), c.Amount), true
		}
	}
	recountMeters(out, limits, now)
	return out, true
}

// KeepHeld is the charge of a root deleted before it settled: its whole
// budget, as for a cancelled task (what it spent is not known).
func KeepHeld(held v1alpha1.Meters) v1alpha1.Meters { return held }

// InFlightRoots are the roots with an entry in flight, by uid, with their
// names.
func InFlightRoots(ledgers []v1alpha1.MeterUse) map[string]string {
	out := map[string]string{}
	for _, led := range ledgers {
		for _, c := range led.Charges {
			if !c.Settled && c.UID != "" {
				out[c.UID] = c.Root
			}
		}
	}
	return out
}

// HoldsMeters reports whether uid has an entry in flight in the ledgers.
func HoldsMeters(ledgers []v1alpha1.MeterUse, uid string) bool {
	for i := range ledgers {
		if c := chargeOf(&ledgers[i], uid); c != nil && !c.Settled {
			return true
		}
	}
	return false
}

// PruneMeters keeps a ledger per limit (in the limits' order), drops the
// settled entries past their window and recomputes used. It reports whether
// anything changed.
func PruneMeters(ledgers []v1alpha1.MeterUse, limits []v1alpha1.MeterLimit, now time.Time) ([]v1alpha1.MeterUse, bool) {
	out := make([]v1alpha1.MeterUse, 0, len(limits))
	for _, l := range limits {
		led := v1alpha1.MeterUse{Name: l.Name}
		if old := ledgerOf(ledgers, l.Name); old != nil {
			led = *old.DeepCopy()
		}
		led.Charges = slices.DeleteFunc(led.Charges, func(c v1alpha1.MeterCharge) bool {
			return c.Settled && !now.Before(c.At.Add(l.Window.Duration))
		})
		if len(led.Charges) == 0 {
			led.Charges = nil
		}
		out = append(out, led)
	}
	recountMeters(out, limits, now)
	if len(out) == 0 {
		out = nil
	}
	return out, !meterLedgersEqual(out, ledgers)
}

// NextMeterExpiry is when a settled entry next leaves a window (zero: none
// will): the ledgers' used must be recounted then.
func NextMeterExpiry(ledgers []v1alpha1.MeterUse, limits []v1alpha1.MeterLimit, now time.Time) time.Time {
	var next time.Time
	for _, l := range limits {
		if _, _, at := windowUse(ledgerOf(ledgers, l.Name), l.Window.Duration, now, ""); !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next
}

func recountMeters(ledgers []v1alpha1.MeterUse, limits []v1alpha1.MeterLimit, now time.Time) {
	for _, l := range limits {
		if led := ledgerOf(ledgers, l.Name); led != nil {
			led.Used, _, _ = windowUse(led, l.Window.Duration, now, "")
		}
	}
}

// foldSettled sums the settled roots' entries per slice of the window
// (window/MeterBuckets, whole seconds), each at the end of its slice: a
// root counts at most one slice longer than its own window, never shorter.
// Only settled entries fold: their uid is needed no more (a settled root
// never starts or settles again).
func foldSettled(led *v1alpha1.MeterUse, window time.Duration) {
	slice := max((window/v1alpha1.MeterBuckets + time.Second - 1).Truncate(time.Second), time.Second)
	kept := led.Charges[:0:0]
	sums := map[int64]int64{}
	for _, c := range led.Charges {
		if !c.Settled {
			kept = append(kept, c)
			continue
		}
		end := c.At.Add(slice - 1).Truncate(slice) // a sum is at the end of its slice already
		sums[end.Unix()] = addSat(sums[end.Unix()], c.Amount)
	}
	for end, n := range sums {
		kept = append(kept, v1alpha1.MeterCharge{At: metav1.NewTime(time.Unix(end, 0).UTC()), Amount: n, Settled: true})
	}
	slices.SortStableFunc(kept, func(a, b v1alpha1.MeterCharge) int { return cmp.Compare(a.At.Unix(), b.At.Unix()) })
	led.Charges = kept
}

func ledgerOf(ledgers []v1alpha1.MeterUse, name string) *v1alpha1.MeterUse {
	if i := slices.IndexFunc(ledgers, func(m v1alpha1.MeterUse) bool { return m.Name == name }); i >= 0 {
		return &ledgers[i]
	}
	return nil
}

func chargeOf(led *v1alpha1.MeterUse, uid string) *v1alpha1.MeterCharge {
	if led == nil || uid == "" {
		return nil
	}
	if i := slices.IndexFunc(led.Charges, func(c v1alpha1.MeterCharge) bool { return c.UID == uid }); i >= 0 {
		return &led.Charges[i]
	}
	return nil
}

func meterLedgersEqual(a, b []v1alpha1.MeterUse) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.MeterUse) bool {
		return x.Name == y.Name && x.Used == y.Used && slices.EqualFunc(x.Charges, y.Charges, func(c, d v1alpha1.MeterCharge) bool {
			return c.UID == d.UID && c.Root == d.Root && c.At.Equal(&d.At) && c.Amount == d.Amount && c.Settled == d.Settled
		})
	})
}

// WindowString shows a window the way it is usually written: 24h, 90m, 1h30m.
func WindowString(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
