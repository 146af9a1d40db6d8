/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestRecordTask(t *testing.T) {
	cases := []struct {
		name       string
		status     v1alpha1.DelegationStatus
		id, ctx    string
		wantCtx    string
		wantResult v1alpha1.SendResult
	}{
		{name: "a send's task", status: v1alpha1.DelegationStatus{SendResult: v1alpha1.SendInFlight}, id: "t1", ctx: "c1", wantCtx: "c1"},
		{name: "a look-up found the task of a lost send", status: v1alpha1.DelegationStatus{SendResult: v1alpha1.SendUnknown},
			id: "t1", ctx: "c1", wantCtx: "c1"},
		{name: "a cancel's look-up carries no context: status keeps its own",
			status: v1alpha1.DelegationStatus{ContextID: "c0", SendResult: v1alpha1.SendUnknown}, id: "t1", wantCtx: "c0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			st := c.status
			RecordTask(&st, c.id, c.ctx)
			g.Expect(st.TaskID).To(Equal(c.id))
			g.Expect(st.ContextID).To(Equal(c.wantCtx))
			g.Expect(st.SendResult).To(Equal(c.wantResult))
		})
	}
}

func TestChangeReply(t *testing.T) {
	cases := []struct {
		name     string
		sent     int32
		inFlight bool
		change   ReplyChange
		wantSent int32
		wantFly  bool
	}{
		{name: "claiming the first reply", change: ReplyClaimed, wantSent: 1, wantFly: true},
		{name: "claiming the next reply", sent: 1, change: ReplyClaimed, wantSent: 2, wantFly: true},
		{name: "the agent has it", sent: 1, inFlight: true, change: ReplyDone, wantSent: 1},
		{name: "nothing reached the agent", sent: 2, inFlight: true, change: ReplyGivenBack, wantSent: 1},
		{name: "nothing to give back", change: ReplyGivenBack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			st := v1alpha1.DelegationStatus{RepliesSent: c.sent, ReplyInFlight: c.inFlight}
			ChangeReply(&st, c.change)
			g.Expect(st.RepliesSent).To(Equal(c.wantSent))
			g.Expect(st.ReplyInFlight).To(Equal(c.wantFly))
		})
	}
}
