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

// ApprovalAsk is what a Delegation about to send is checked against.
type ApprovalAsk struct {
	Name    string
	Created time.Time
	Depth   int
	Agent   string
	Meters  map[string]int64
}

// Decided is one DelegationApproval naming the Delegation.
type Decided struct {
	Name     string
	Created  time.Time
	Decision v1alpha1.Decision
	Reason   string
}

// ApprovalVerdict is what the approval gate comes to.
type ApprovalVerdict struct {
	// Send: no threshold is crossed, or an approval let it go (By names it).
	Send bool
	By   string
	// Record is the wait (AwaitingApproval) or the denial (Failed, Denied)
	// when Send is false.
	Record Record
}

// ApprovalGate decides whether a Delegation needs, and has, an approval:
// the first threshold it crosses (quotas by name) needs one; a denial among
// the approvals fails it, an approval lets it go, none keeps it Pending.
// Approvals created before the Delegation decided an earlier one of the
// same name and are ignored.
func ApprovalGate(quotas []Quota, ask ApprovalAsk, decided []Decided) ApprovalVerdict {
	why := crossed(quotas, ask)
	if why == "" {
		return ApprovalVerdict{Send: true}
	}
	decided = slices.Clone(decided)
	slices.SortFunc(decided, func(a, b Decided) int { return strings.Compare(a.Name, b.Name) })
	by := ""
	for _, d := range decided {
		if d.Created.Before(ask.Created) {
			continue
		}
		if d.Decision == v1alpha1.DecisionDenied {
			return ApprovalVerdict{Record: failed(StepSettle, v1alpha1.FailurePolicyRefusal, ReasonDenied,
				fmt.Sprintf("denied by DelegationApproval %q: %s", d.Name, d.Reason)).Record()}
		}
		if by == "" && d.Decision == v1alpha1.DecisionApproved {
			by = d.Name
		}
	}
	if by != "" {
		return ApprovalVerdict{Send: true, By: by}
	}
	return ApprovalVerdict{Record: Progress(v1alpha1.PhasePending, ReasonAwaitingApproval, fmt.Sprintf(
		"%s; approve with 'kubectl tether approve %s' or deny with 'kubectl tether deny %s --reason ...'", why, ask.Name, ask.Name))}
}

// crossed names the first approval threshold the ask crosses ("" if none).
func crossed(quotas []Quota, ask ApprovalAsk) string {
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range quotas {
		t := q.Approval
		if t == nil {
			continue
		}
		at := fmt.Sprintf("DelegationQuota %q needs approval: ", q.Name)
		if t.DepthAbove != nil && ask.Depth > int(*t.DepthAbove) {
			return at + fmt.Sprintf("depth %d is above %d", ask.Depth, *t.DepthAbove)
		}
		if slices.Contains(t.Agents, ask.Agent) {
			return at + fmt.Sprintf("Agent %q is listed", ask.Agent)
		}
		for _, m := range slices.Sorted(maps.Keys(t.Meters)) {
			if n, ok := ask.Meters[m]; ok && n > t.Meters[m] {
				return at + fmt.Sprintf("budget meter %s %d is above %d", m, n, t.Meters[m])
			}
		}
	}
	return ""
}
