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
	// RequestedBy is the user who created the Delegation (its requested-by
	// annotation), "" when not recorded.
	RequestedBy string
}

// Decided is one DelegationApproval naming the Delegation.
type Decided struct {
	Name     string
	Created  time.Time
	Decision v1alpha1.Decision
	Reason   string
	// ApprovedBy is the user who created the approval (its approved-by
	// annotation), "" when not recorded.
	ApprovedBy string
}

// ApprovalVerdict is what the approval gate comes to.
type ApprovalVerdict struct {
	// Send: no threshold is crossed, or an approval let it go (By names it).
	Send bool
	By   string
	// Record is the wait (AwaitingApproval) or the denial (Failed, Denied)
	// when Send is false.
	Record Record
	// Ignored names the approvals that did not count because the requester
	// made them (empty unless some were).
	Ignored []string
}

// ApprovalGate decides whether a Delegation needs, and has, an approval:
// the first threshold it crosses (quotas by name) needs one; a denial among
// the approvals fails it, an approval lets it go, none keeps it Pending.
// Approvals created before the Delegation decided an earlier one of the
// same name and are ignored. So is an approval by the requester (approved-by
// equal to requested-by), unless every quota whose threshold is crossed
// allows self-approval; the requester's denial still counts.
func ApprovalGate(quotas []Quota, ask ApprovalAsk, decided []Decided) ApprovalVerdict {
	why, selfOK := crossed(quotas, ask)
	if why == "" {
		return ApprovalVerdict{Send: true}
	}
	decided = slices.Clone(decided)
	slices.SortFunc(decided, func(a, b Decided) int { return strings.Compare(a.Name, b.Name) })
	by := ""
	var ignored []string
	for _, d := range decided {
		if d.Created.Before(ask.Created) {
			continue
		}
		if d.Decision == v1alpha1.DecisionDenied {
			return ApprovalVerdict{Record: failed(StepSettle, v1alpha1.FailurePolicyRefusal, ReasonDenied,
				fmt.Sprintf("denied by DelegationApproval %q: %s", d.Name, d.Reason)).Record()}
		}
		if d.Decision != v1alpha1.DecisionApproved {
			continue
		}
		if !selfOK && ask.RequestedBy != "" && d.ApprovedBy == ask.RequestedBy {
			ignored = append(ignored, d.Name)
			continue
		}
		if by == "" {
			by = d.Name
		}
	}
	if by != "" {
		return ApprovalVerdict{Send: true, By: by}
	}
	if len(ignored) > 0 {
		why += fmt.Sprintf("; an approval by the requester (%s) does not count (DelegationApproval %s)",
			ask.RequestedBy, quotedList(ignored))
	}
	return ApprovalVerdict{Ignored: ignored, Record: Progress(v1alpha1.PhasePending, ReasonAwaitingApproval, fmt.Sprintf(
		"%s; approve with 'kubectl tether approve %s' or deny with 'kubectl tether deny %s --reason ...'", why, ask.Name, ask.Name))}
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// crossed names the first approval threshold the ask crosses ("" if none);
// selfOK: every quota with a crossed threshold allows self-approval.
func crossed(quotas []Quota, ask ApprovalAsk) (why string, selfOK bool) {
	quotas = slices.Clone(quotas)
	slices.SortFunc(quotas, func(a, b Quota) int { return strings.Compare(a.Name, b.Name) })
	selfOK = true
	for _, q := range quotas {
		if t := q.Approval; t != nil {
			if w := crossedOne(t, ask); w != "" {
				if why == "" {
					why = fmt.Sprintf("DelegationQuota %q needs approval: %s", q.Name, w)
				}
				selfOK = selfOK && t.AllowSelfApproval
			}
		}
	}
	return why, selfOK
}

// crossedOne names the first threshold of t the ask crosses ("" if none).
func crossedOne(t *v1alpha1.ApprovalThresholds, ask ApprovalAsk) string {
	if t.DepthAbove != nil && ask.Depth > int(*t.DepthAbove) {
		return fmt.Sprintf("depth %d is above %d", ask.Depth, *t.DepthAbove)
	}
	if slices.Contains(t.Agents, ask.Agent) {
		return fmt.Sprintf("Agent %q is listed", ask.Agent)
	}
	for _, m := range slices.Sorted(maps.Keys(t.Meters)) {
		if n, ok := ask.Meters[m]; ok && n > t.Meters[m] {
			return fmt.Sprintf("budget meter %s %d is above %d", m, n, t.Meters[m])
		}
	}
	return ""
}
