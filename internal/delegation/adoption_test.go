/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

func TestSenderUID(t *testing.T) {
	const uid = "0b7e2c1a-9f3d-4c55-8a10-2f6d4e8b9c01"
	for id, want := range map[string]string{
		MessageID(uid, -1):                         uid,
		MessageID(uid, 3):                          uid,
		ContextID(&v1alpha1.DelegationSpec{}, uid): uid,
		"tether-demo":                              "",
		"tether-" + uid[:35]:                       "",
		"tether-" + uid + "x":                      "",
		"my-context":                               "",
		"":                                         "",
		"tether-0b7e2c1a_9f3d-4c55-8a10-2f6d4e8b9c01": "",
	} {
		NewWithT(t).Expect(SenderUID(id)).To(Equal(want), id)
	}
}

func TestAdoption(t *testing.T) {
	const (
		own     = "11111111-1111-4111-8111-111111111111"
		sibling = "22222222-2222-4222-8222-222222222222"
		foreign = "33333333-3333-4333-8333-333333333333"
	)
	inNamespace := func(uid string) bool { return uid == sibling }
	for _, tc := range []struct {
		name string
		task *a2a.Task
		ok   bool
	}{
		{"a task no Delegation sent", &a2a.Task{ID: "t", ContextID: "shared", MessageIDs: []string{"m-1"}}, true},
		{"a task detached from a Delegation of this namespace", &a2a.Task{ID: "t", ContextID: "tether-" + sibling,
			MessageIDs: []string{MessageID(sibling, -1), MessageID(sibling, 0)}}, true},
		{"its own task", &a2a.Task{ID: "t", ContextID: "tether-" + own}, true},
		{"a user's context id that only looks like ours", &a2a.Task{ID: "t", ContextID: "tether-demo"}, true},
		{"another namespace's context", &a2a.Task{ID: "t", ContextID: "tether-" + foreign}, false},
		{"another namespace's first message in a context of its own choosing",
			&a2a.Task{ID: "t", ContextID: "team-chat", MessageIDs: []string{MessageID(foreign, -1)}}, false},
		{"another namespace's reply among this namespace's messages",
			&a2a.Task{ID: "t", ContextID: "tether-" + sibling, MessageIDs: []string{MessageID(sibling, -1), MessageID(foreign, 2)}}, false},
		{"no task read", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			step, ok := Adoption(own, tc.task, inNamespace)
			g.Expect(ok).To(Equal(tc.ok))
			if tc.ok {
				return
			}
			g.Expect(step.Kind).To(Equal(StepSettle), "nothing is sent to a task that is not ours")
			g.Expect(step.Phase).To(Equal(v1alpha1.PhaseFailed))
			g.Expect(step.Outcome.Reason).To(Equal(ReasonAdoptionRefused))
			g.Expect(step.Outcome.FailureClass).To(Equal(v1alpha1.FailurePolicyRefusal))
			g.Expect(step.Outcome.Message).To(ContainSubstring(foreign))
		})
	}
}
