/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Quota is one DelegationQuota of the namespace, as the gate sees it.
type Quota struct {
	Name string
	Hard v1alpha1.QuotaLimits
	// Approval holds the thresholds past which a send needs approval.
	Approval *v1alpha1.ApprovalThresholds
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
}

// QuotaGate decides whether a Delegation may send now under the
// namespace's quotas: every quota applies, the first one it would exceed
// (by name) holds it Pending with reason QuotaExceeded, never Failed.
// Waiting Delegations start in creation order, then by name, as room frees.
func QuotaGate(quotas []Quota, ask QuotaAsk) (Record, bool) {
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range quotas {
		h := q.Hard
		if h.Depth != nil && ask.Depth > int(*h.Depth) {
			return quotaWait(q.Name, fmt.Sprintf("depth %d exceeds %d; it cannot start under this quota", ask.Depth, *h.Depth)), false
		}
		if h.ChildrenPerParent != nil && len(ask.Siblings) > 0 {
			if ok, held := Admit(ask.UID, int(*h.ChildrenPerParent), ask.Siblings); !ok {
				return quotaWait(q.Name, fmt.Sprintf("childrenPerParent %d/%d; waiting in creation order", held, *h.ChildrenPerParent)), false
			}
		}
		if h.InFlight != nil {
			if ok, held := Admit(ask.UID, int(*h.InFlight), ask.InFlight); !ok {
				return quotaWait(q.Name, fmt.Sprintf("inFlight %d/%d; waiting in creation order", held, *h.InFlight)), false
			}
		}
	}
	return Record{}, true
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
