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

func TestApprovalGate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	policy := Quota{Name: "team", Approval: &v1alpha1.ApprovalThresholds{
		DepthAbove: ptr.To[int32](1), Agents: []string{"costly"}, Meters: map[string]int64{"tokens": 1000}}}
	ask := func(depth int, agent string, tokens int64) ApprovalAsk {
		a := ApprovalAsk{Name: "d", Created: t0, Depth: depth, Agent: agent}
		if tokens > 0 {
			a.Meters = map[string]int64{"tokens": tokens}
		}
		return a
	}
	approved := Decided{Name: "ok", Created: t0.Add(time.Minute), Decision: v1alpha1.DecisionApproved}
	denied := Decided{Name: "no", Created: t0.Add(time.Minute), Decision: v1alpha1.DecisionDenied, Reason: "too costly"}
	how := "; approve with 'kubectl tether approve d' or deny with 'kubectl tether deny d --reason ...'"
	cases := []struct {
		name    string
		quotas  []Quota
		ask     ApprovalAsk
		decided []Decided
		send    bool
		by      string
		phase   v1alpha1.Phase
		reason  string
		msg     string
	}{
		{name: "no quota", ask: ask(5, "costly", 5000), send: true},
		{name: "a quota without thresholds", quotas: []Quota{{Name: "team"}}, ask: ask(5, "costly", 5000), send: true},
		{name: "under every threshold", quotas: []Quota{policy}, ask: ask(1, "cheap", 1000), send: true},
		{name: "too deep waits", quotas: []Quota{policy}, ask: ask(2, "cheap", 0),
			phase: v1alpha1.PhasePending, reason: ReasonAwaitingApproval, msg: `DelegationQuota "team" needs approval: depth 2 is above 1` + how},
		{name: "a listed agent waits", quotas: []Quota{policy}, ask: ask(0, "costly", 0),
			phase: v1alpha1.PhasePending, reason: ReasonAwaitingApproval, msg: `DelegationQuota "team" needs approval: Agent "costly" is listed` + how},
		{name: "a meter above waits", quotas: []Quota{policy}, ask: ask(0, "cheap", 1001),
			phase: v1alpha1.PhasePending, reason: ReasonAwaitingApproval, msg: `DelegationQuota "team" needs approval: budget meter tokens 1001 is above 1000` + how},
		{name: "approved goes", quotas: []Quota{policy}, ask: ask(0, "costly", 0), decided: []Decided{approved}, send: true, by: "ok"},
		{name: "denied fails with the reason", quotas: []Quota{policy}, ask: ask(0, "costly", 0), decided: []Decided{denied},
			phase: v1alpha1.PhaseFailed, reason: ReasonDenied, msg: `denied by DelegationApproval "no": too costly`},
		{name: "a denial wins over an approval", quotas: []Quota{policy}, ask: ask(0, "costly", 0), decided: []Decided{approved, denied},
			phase: v1alpha1.PhaseFailed, reason: ReasonDenied, msg: `denied by DelegationApproval "no": too costly`},
		{name: "an approval older than the Delegation decided an earlier one", quotas: []Quota{policy}, ask: ask(0, "costly", 0),
			decided: []Decided{{Name: "old", Created: t0.Add(-time.Minute), Decision: v1alpha1.DecisionApproved}},
			phase:   v1alpha1.PhasePending, reason: ReasonAwaitingApproval, msg: `DelegationQuota "team" needs approval: Agent "costly" is listed` + how},
		{name: "an approval is not needed under the thresholds, a denial neither", quotas: []Quota{policy}, ask: ask(0, "cheap", 0),
			decided: []Decided{denied}, send: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := ApprovalGate(tc.quotas, tc.ask, tc.decided)
			g.Expect(v.Send).To(Equal(tc.send))
			g.Expect(v.By).To(Equal(tc.by))
			if tc.send {
				return
			}
			g.Expect(v.Record.Phase).To(Equal(tc.phase))
			g.Expect(v.Record.Outcome.Reason).To(Equal(tc.reason))
			g.Expect(v.Record.Outcome.Message).To(Equal(tc.msg))
			if tc.phase == v1alpha1.PhaseFailed {
				g.Expect(v.Record.Outcome.FailureClass).To(Equal(v1alpha1.FailurePolicyRefusal))
			}
		})
	}
}

func TestDeniedRefundsTheReservation(t *testing.T) {
	g := NewWithT(t)
	st := &v1alpha1.DelegationStatus{Outcome: &v1alpha1.Outcome{Reason: ReasonDenied}}
	g.Expect(Charge(&v1alpha1.DelegationSpec{}, st, v1alpha1.Meters{"tokens": 500})).To(BeEmpty())
}

// An approval by the requester does not count unless every quota whose
// threshold is crossed allows it; someone else's does, and the requester's
// denial always does.
func TestApprovalGateSelfApproval(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	strict := Quota{Name: "team", Approval: &v1alpha1.ApprovalThresholds{Agents: []string{"costly"}}}
	lenient := Quota{Name: "lab", Approval: &v1alpha1.ApprovalThresholds{Agents: []string{"costly"}, AllowSelfApproval: true}}
	unrelated := Quota{Name: "other", Approval: &v1alpha1.ApprovalThresholds{Agents: []string{"elsewhere"}}}
	ask := ApprovalAsk{Name: "d", Created: t0, Agent: "costly", RequestedBy: "alice"}
	by := func(name, user string, decision v1alpha1.Decision) Decided {
		return Decided{Name: name, Created: t0.Add(time.Minute), Decision: decision, Reason: "r", ApprovedBy: user}
	}
	waits := `DelegationQuota "team" needs approval: Agent "costly" is listed; an approval by the requester (alice) does not count ` +
		`(DelegationApproval "by-alice"); approve with 'kubectl tether approve d' or deny with 'kubectl tether deny d --reason ...'`
	cases := []struct {
		name    string
		quotas  []Quota
		ask     ApprovalAsk
		decided []Decided
		by      string
		msg     string
		reason  string
		ignored []string
	}{
		{name: "the requester's approval does not count", quotas: []Quota{strict}, ask: ask,
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved)},
			reason:  ReasonAwaitingApproval, msg: waits, ignored: []string{"by-alice"}},
		{name: "someone else's does", quotas: []Quota{strict}, ask: ask,
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved), by("by-bob", "bob", v1alpha1.DecisionApproved)}, by: "by-bob"},
		{name: "allowed by the quota", quotas: []Quota{lenient}, ask: ask,
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved)}, by: "by-alice"},
		{name: "allowed by one crossed quota but not another", quotas: []Quota{lenient, strict}, ask: ask,
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved)},
			reason:  ReasonAwaitingApproval, ignored: []string{"by-alice"},
			msg: `DelegationQuota "lab" needs approval: Agent "costly" is listed; an approval by the requester (alice) does not count ` +
				`(DelegationApproval "by-alice"); approve with 'kubectl tether approve d' or deny with 'kubectl tether deny d --reason ...'`},
		{name: "a quota whose threshold is not crossed has no say", quotas: []Quota{lenient, unrelated}, ask: ask,
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved)}, by: "by-alice"},
		{name: "the requester's denial counts", quotas: []Quota{strict}, ask: ask,
			decided: []Decided{by("no", "alice", v1alpha1.DecisionDenied)},
			reason:  ReasonDenied, msg: `denied by DelegationApproval "no": r`},
		{name: "an unrecorded requester: approvals count", quotas: []Quota{strict},
			ask:     ApprovalAsk{Name: "d", Created: t0, Agent: "costly"},
			decided: []Decided{by("by-alice", "alice", v1alpha1.DecisionApproved)}, by: "by-alice"},
		{name: "an unrecorded approver is not the requester", quotas: []Quota{strict}, ask: ask,
			decided: []Decided{by("anon", "", v1alpha1.DecisionApproved)}, by: "anon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := ApprovalGate(tc.quotas, tc.ask, tc.decided)
			g.Expect(v.Send).To(Equal(tc.by != ""))
			g.Expect(v.By).To(Equal(tc.by))
			g.Expect(v.Ignored).To(Equal(tc.ignored))
			if tc.by == "" {
				g.Expect(v.Record.Outcome.Reason).To(Equal(tc.reason))
				g.Expect(v.Record.Outcome.Message).To(Equal(tc.msg))
			}
		})
	}
}
