/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Quota is one DelegationQuota of the namespace, as the gate sees it.
type Quota struct {
	Name string
	Hard v1alpha1.QuotaLimits
	// Approval holds the thresholds past which a send needs approval.
	Approval *v1alpha1.ApprovalThresholds
	// Meters is the quota's ledger of Hard.Meters (status.used.meters).
	Meters []v1alpha1.MeterUse
}

// QuotaAsk is what a Delegation about to send is checked against.
type QuotaAsk struct {
	UID string
	// Depth is the Delegation's level in its tree (a root is 0).
	Depth int
	// InFlight are the namespace's Delegations that send to an agent and
	// have not settled (the asker among them): places go in creation order.
	InFlight []Contender
	// Siblings are the children of the Delegation's parent (the asker
	// among them); a child that started holds its place while it exists,
	// settled or not. Empty for a root.
	Siblings []Contender
	// Root is the asker when it is a root Delegation: only roots count
	// against Hard.Meters (MeterGate). Nil for a child.
	Root *RootAsk
	// WaitingRoots are the namespace's other roots waiting for a quota:
	// the older ones go first.
	WaitingRoots []RootAsk
	// Now is when the meters' windows are read.
	Now time.Time
}

// QuotaGate decides whether a Delegation may send now under the
// namespace's quotas: every quota applies, and it waits Pending, never
// Failed, for the first limit it would exceed (by kind, then by quota
// name). The limits of its tree come first: too deep (OverQuotaLimit) or
// its parent's started children (ChildrenPerParentExceeded), so it joins
// the namespace's inFlight line (QuotaExceeded) only once nothing else
// holds it. Waiting Delegations start in creation order, then by name, as
// room frees.
func QuotaGate(quotas []Quota, ask QuotaAsk) (Record, bool) {
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range quotas {
		if h := q.Hard; h.Depth != nil && ask.Depth > int(*h.Depth) {
			// A limit no usage changes: it waits as OverQuotaLimit, holding
			// no place in the inFlight line (as QuotaExceeded it was ahead
			// of every younger Delegation of the namespace, for good).
			return Progress(v1alpha1.PhasePending, ReasonOverQuotaLimit, fmt.Sprintf(
				"DelegationQuota %q: depth %d exceeds %d; it cannot start under this quota", q.Name, ask.Depth, *h.Depth)), false
		}
	}
	for _, q := range quotas {
		if h := q.Hard; h.ChildrenPerParent != nil && len(ask.Siblings) > 0 {
			if ok, held := Admit(ask.UID, int(*h.ChildrenPerParent), ask.Siblings); !ok {
				// Its siblings hold it, maybe for good (a started child
				// counts until it is deleted): it waits apart from the
				// inFlight line, or it would hold up the namespace.
				return Progress(v1alpha1.PhasePending, ReasonChildrenPerParentExceeded, fmt.Sprintf(
					"DelegationQuota %q: childrenPerParent %d/%d; waiting in creation order for a started sibling to be deleted",
					q.Name, held, *h.ChildrenPerParent)), false
			}
		}
	}
	for _, q := range quotas {
		if h := q.Hard; h.InFlight != nil {
			if ok, held := Admit(ask.UID, int(*h.InFlight), ask.InFlight); !ok {
				return quotaWait(q.Name, fmt.Sprintf("inFlight %d/%d; waiting in creation order", held, *h.InFlight)), false
			}
		}
	}
	return Record{}, true
}

// QuotaLine is one of the creation-order lines of the quotas.
type QuotaLine int

const (
	// NamespaceLine: the namespace's Delegations, for places under
	// hard.inFlight.
	NamespaceLine QuotaLine = iota
	// SiblingLine: one parent's children, for places under
	// hard.childrenPerParent.
	SiblingLine
)

// WaitsInLine reports whether a Delegation not sent, Pending with reason,
// is in line (ahead of the younger ones): one waiting for the inFlight
// line is in both lines (it passed its siblings' check, in their line);
// one its siblings hold is in theirs only.
func WaitsInLine(line QuotaLine, reason string) bool {
	switch reason {
	case ReasonQuotaExceeded:
		return true
	case ReasonChildrenPerParentExceeded:
		return line == SiblingLine
	}
	return false
}

// QuotaTurn is how many of the Delegations waiting for a quota, taken in
// line (InLine), a place freed under inFlight may let start: places go in
// that order, so only the first ones, as many as the largest inFlight of
// the quotas, can; the others stay behind them whatever wakes them.
// limited is false when no quota limits inFlight.
func QuotaTurn(quotas []Quota) (turn int, limited bool) {
	for _, q := range quotas {
		if q.Hard.InFlight != nil {
			turn, limited = max(turn, int(*q.Hard.InFlight)), true
		}
	}
	return turn, limited
}

func quotaWait(quota, msg string) Record {
	return Progress(v1alpha1.PhasePending, ReasonQuotaExceeded, fmt.Sprintf("DelegationQuota %q: %s", quota, msg))
}

// LimitsAsk is what a Delegation asks that static quota limits bound.
type LimitsAsk struct {
	// Meters are its spec.budget.meters.
	Meters map[string]int64
	// Attempts is its spec.retry.maxAttempts (0 without a policy).
	Attempts int32
}

// QuotaLimitsGate checks a Delegation against the limits no usage changes
// (spec.hard.maxBudget, maxAttempts): the first quota (by name) it exceeds
// holds it Pending, reason OverQuotaLimit, until the quota is raised or the
// Delegation asks less. It holds no place in the quota's queue meanwhile.
// The chart's admission policy refuses the same Delegations at creation
// with the same words.
func QuotaLimitsGate(quotas []Quota, ask LimitsAsk) (Record, bool) {
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range quotas {
		h := q.Hard
		for _, m := range slices.Sorted(maps.Keys(h.MaxBudget)) {
			if n, ok := ask.Meters[m]; ok && n > h.MaxBudget[m] {
				return overLimit(fmt.Sprintf("DelegationQuota %q allows at most %d %s per Delegation; this one asks %d",
					q.Name, h.MaxBudget[m], m, n), "spec.budget.meters."+m, "spec.hard.maxBudget"), false
			}
		}
		if h.MaxAttempts != nil && ask.Attempts > *h.MaxAttempts {
			return overLimit(fmt.Sprintf("DelegationQuota %q allows at most %d attempts per Delegation; this one asks %d",
				q.Name, *h.MaxAttempts, ask.Attempts), "spec.retry.maxAttempts", "spec.hard.maxAttempts"), false
		}
	}
	return Record{}, true
}

func overLimit(msg, field, limit string) Record {
	return Progress(v1alpha1.PhasePending, ReasonOverQuotaLimit,
		fmt.Sprintf("%s: lower %s or raise the quota's %s", msg, field, limit))
}
