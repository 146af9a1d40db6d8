/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func TestRenderDescribe(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	tests := []struct {
		name string
		d    v1alpha1.Delegation
		want string
	}{
		{
			name: "a leased parent with a reservation held by a child",
			d: dlg("research", "planner", v1alpha1.PhaseRunning, 10*time.Minute, parent("plan"), task("t-100"),
				outcome("Working", "", "drafting the outline"),
				func(d *v1alpha1.Delegation) {
					d.Spec.Skill = "research"
					d.Spec.Replies = replies("EU only", "and cite sources")
					d.Status.RepliesSent = 1
					d.Status.RemoteState = "working"
					d.Status.StartTime = at(-9 * time.Minute)
					d.Status.Deadline = at(21 * time.Minute)
					d.Status.Children = &v1alpha1.ChildCounts{Active: 1, Succeeded: 2}
					d.Status.Lease = &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: 30 * time.Second},
						Granted: true, GrantedUntil: at(-8*time.Minute - 30*time.Second)}
					d.Status.Budget = &v1alpha1.BudgetStatus{
						Granted:  v1alpha1.Meters{"tokens": 20000, "calls": 10},
						Reserved: v1alpha1.Meters{"tokens": 5000},
						Spent:    v1alpha1.Meters{"tokens": 3000, "calls": 4},
						Left:     v1alpha1.Meters{"tokens": 12000, "calls": 6},
						Reservations: []v1alpha1.Reservation{
							{Child: "summarize", UID: "u-2", Meters: v1alpha1.Meters{"tokens": 5000}}},
					}
				}),
			want: `Name:           research
Namespace:      default
Agent:          planner (skill research)
Parent:         plan
Phase:          Running
Reason:         Working
Message:        drafting the outline
Task:           t-100
Remote state:   working
Started:        2026-11-29T11:51:00Z (9m ago)
Deadline:       2026-11-29T12:21:00Z (in 21m)
Replies:        1 of 2 sent
Children:       1 active, 2 succeeded, 0 failed, 0 canceled
Lease:
  TTL:            30s
  Granted:        true
  Granted until:  2026-11-29T11:51:30Z (8m30s ago)
Budget:
  METER    GRANTED   RESERVED   SPENT   LEFT
  calls    10        -          4       6
  tokens   20000     5000       3000    12000
Reservations:
  CHILD       RESERVED
  summarize   tokens=5000
`,
		},
		{
			name: "a failed task the agent gave no lease",
			d: dlg("fetch", "fetcher", v1alpha1.PhaseFailed, time.Hour,
				outcome("DeadlineExceeded", v1alpha1.FailureBudgetExhausted, "timeout 10m0s passed"),
				func(d *v1alpha1.Delegation) {
					d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: time.Minute}}
					d.Status.Lease = &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: time.Minute},
						Reason: "agent does not grant leases"}
					d.Status.CompletionTime = at(-50 * time.Minute)
				}),
			want: `Name:           fetch
Namespace:      default
Agent:          fetcher
Parent:         -
Phase:          Failed
Reason:         DeadlineExceeded
Failure class:  BudgetExhausted
Message:        timeout 10m0s passed
Task:           -
Started:        -
Completed:      2026-11-29T11:10:00Z (50m ago)
Lease:
  TTL:            1m0s
  Granted:        false
  Granted until:  -
  Reason:         agent does not grant leases
Budget:         none
`,
		},
		{
			name: "a task for another namespace's Agent, waiting for a grant",
			d: dlg("ask", "shared", v1alpha1.PhasePending, time.Minute,
				outcome("AgentNotGranted", "", `no AgentGrant in namespace "platform" admits this namespace to Agent "shared"`),
				func(d *v1alpha1.Delegation) { d.Spec.AgentRef.Namespace = "platform" }),
			want: `Name:           ask
Namespace:      default
Agent:          platform/shared
Parent:         -
Phase:          Pending
Reason:         AgentNotGranted
Message:        no AgentGrant in namespace "platform" admits this namespace to Agent "shared"
Task:           -
Started:        -
Lease:          none
Budget:         none
`,
		},
		{
			name: "a group nobody has looked at yet",
			d: dlg("batch", "", "", time.Minute, func(d *v1alpha1.Delegation) {
				d.Spec.Lease = nil
			}),
			want: `Name:           batch
Namespace:      default
Agent:          (group)
Parent:         -
Phase:          -
Task:           -
Started:        -
Lease:          none
Budget:         none
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(renderDescribe(&tc.d, now, false)).To(Equal(tc.want))
		})
	}
}

func TestRenderDescribeLeaseRequestedNotAnswered(t *testing.T) {
	g := NewWithT(t)
	d := dlg("x", "a", v1alpha1.PhasePending, time.Minute, func(d *v1alpha1.Delegation) {
		d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}}
	})
	g.Expect(renderDescribe(&d, now, false)).To(ContainSubstring("Lease:          requested 30s, no answer yet\n"))
	g.Expect(renderDescribe(&d, now, true)).To(ContainSubstring("Phase:          Pending\n"), "Pending has no colour")
}

func TestDescribeAgentCard(t *testing.T) {
	g := NewWithT(t)
	check := &v1alpha1.AgentCardSignature{Required: true}
	g.Expect(describeAgentCard(nil)).To(BeEmpty())
	g.Expect(describeAgentCard(&v1alpha1.Agent{})).To(BeEmpty(), "an Agent that checks nothing shows nothing")
	a := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{CardSignature: check}}
	g.Expect(describeAgentCard(a)).To(ContainSubstring("not verified"))
	a.Status.CardSignature = &v1alpha1.AgentCardSignatureStatus{KeyID: "kit-1", Algorithm: "ES256"}
	g.Expect(describeAgentCard(a)).To(And(ContainSubstring("Agent card"), ContainSubstring("signed by key kit-1 (ES256)")))
	a.Status.CardSignature.KeyID = "kit\x1b[2J"
	g.Expect(describeAgentCard(a)).NotTo(ContainSubstring("\x1b"), "a key id comes from the agent: escaped")
}

// describe shows the Agent's Conformant condition when it is checked:
// conformant, or not with the reason and why (escaped: it quotes what the
// agent said).
func TestDescribeAgentConformance(t *testing.T) {
	g := NewWithT(t)
	g.Expect(describeAgentConformance(nil)).To(BeEmpty())
	g.Expect(describeAgentConformance(&v1alpha1.Agent{})).To(BeEmpty(), "an Agent that is not checked shows nothing")
	a := &v1alpha1.Agent{}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: delegation.ConditionConformant, Status: metav1.ConditionTrue,
		Reason: delegation.ReasonMustsPass})
	g.Expect(describeAgentConformance(a)).To(And(ContainSubstring("Conformance"), ContainSubstring("conformant")))
	g.Expect(describeAgentConformance(a)).NotTo(ContainSubstring("not conformant"))
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: delegation.ConditionConformant, Status: metav1.ConditionFalse,
		Reason: delegation.ReasonMustFailed, Message: "failed: cancel.working-task; task t-1 still Working\x1b[2J"})
	g.Expect(describeAgentConformance(a)).To(ContainSubstring("not conformant (MustFailed): failed: cancel.working-task"))
	g.Expect(describeAgentConformance(a)).NotTo(ContainSubstring("\x1b"), "the message quotes the agent: escaped")
}
