/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/conformance"
)

// The conformance check (kubectl tether check-agent) against the JS SDK's
// default request handler: every core MUST passes on every binding the card
// lists (JSON-RPC and, on the REST-only agent, HTTP+JSON), the extensions are "not advertised", and on the 0.3-only agent the
// look-up by context is "not advertised" too (0.3 has no ListTasks).
func TestCheckAgentPassesTheJSSDKAgent(t *testing.T) {
	for _, mode := range []string{modeV1, modeV03, modeBoth, modeREST} {
		t.Run("protocol-"+mode, func(t *testing.T) {
			requireAgents(t)
			t.Parallel()
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := conformance.Run(ctx, conformance.Options{Endpoint: a2a.Endpoint{URL: agents[mode].URL()}})
			g.Expect(err).NotTo(HaveOccurred())
			got := map[string]conformance.Result{}
			for _, r := range rep.Results {
				got[r.ID] = r
				t.Logf("%-34s %-6s %-14s %s", r.ID, r.Level, r.Status, r.Seen)
			}
			// Every MUST that applies ran and passed: none failed, none
			// could not run.
			g.Expect(rep.Failed(conformance.Must)).To(BeEmpty())
			g.Expect(rep.NotRunOf(conformance.Must)).To(BeEmpty())
			g.Expect(rep.Verdict.Conformant).To(BeTrue(), rep.Verdict.Reason)
			g.Expect(rep.MessageOnly).To(BeFalse())
			for _, id := range []string{conformance.CheckCardParses, conformance.CheckCardReachable, conformance.CheckGetUnknownTask,
				conformance.CheckInputRequired, conformance.CheckCancelWorking, conformance.CheckCancelFinished,
				conformance.CheckGetHistory, conformance.CheckBoundsIDs, conformance.CheckSchemaAnswers} {
				g.Expect(got[id].Status).To(Equal(conformance.Pass), id)
			}
			g.Expect(got[conformance.CheckCancelWorking].TCK).To(ConsistOf("CORE-CANCEL-001"))
			// The card declares streaming and no push notifications; the
			// SDK refuses a version its card does not list.
			g.Expect(got[conformance.CheckPushDelivery].Status).To(Equal(conformance.NotAdvertised))
			if mode == modeV03 {
				g.Expect(got[conformance.CheckSubscribe].Status).To(Equal(conformance.NotAdvertised))
				g.Expect(got[conformance.CheckVersionRefused].Status).To(Equal(conformance.NotAdvertised))
			} else {
				g.Expect(got[conformance.CheckSubscribe].Status).To(Equal(conformance.Pass), got[conformance.CheckSubscribe].Seen)
				g.Expect(got[conformance.CheckVersionRefused].Status).To(Equal(conformance.Pass), got[conformance.CheckVersionRefused].Seen)
			}
			for _, id := range []string{conformance.CheckLeaseRefuses, conformance.CheckLeaseRenewal, conformance.CheckLeaseLapse,
				conformance.CheckBudgetReport, conformance.CheckBudgetDeadline} {
				g.Expect(got[id].Status).To(Equal(conformance.NotAdvertised), id)
			}
			if mode == modeV03 {
				g.Expect(got[conformance.CheckListByContext].Status).To(Equal(conformance.NotAdvertised))
			} else {
				g.Expect(got[conformance.CheckListByContext].Status).To(Equal(conformance.Pass))
				g.Expect(got[conformance.CheckListHistory].Status).To(Equal(conformance.Pass))
			}
			// The check's messages are recognisable: every one it sent
			// carries an id that starts with its run's prefix.
			prefix := conformance.MessageIDPrefix + rep.RunID + "-"
			sent := 0
			for _, c := range agents[mode].Calls(sendMethods) {
				if strings.HasPrefix(c.ContextID, prefix) {
					sent++
					g.Expect(c.MessageID).To(HavePrefix(prefix))
				}
			}
			g.Expect(sent).To(BeNumerically(">=", 4))
		})
	}
}

// The same agent driven with texts it answers with messages ("message …"):
// not conformant, and the report says why. The send-get and task checks
// did not run; nothing is counted as a pass that did not happen.
func TestCheckAgentNamesAJSSDKAgentThatAnswersWithMessages(t *testing.T) {
	for _, mode := range []string{modeV1, modeREST} {
		t.Run("protocol-"+mode, func(t *testing.T) {
			requireAgents(t)
			t.Parallel()
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			texts := conformance.Texts{Quick: "message: quick", Long: "message: long", Ask: "message: ask", Reply: "message: reply"}
			rep, err := conformance.Run(ctx, conformance.Options{Endpoint: a2a.Endpoint{URL: agents[mode].URL()}, Texts: texts,
				Groups: []string{conformance.GroupCard, conformance.GroupCore}, Within: 3 * time.Second})
			g.Expect(err).NotTo(HaveOccurred())
			for _, r := range rep.Results {
				t.Logf("%-34s %-6s %-14s %s", r.ID, r.Level, r.Status, r.Seen)
			}
			g.Expect(rep.MessageOnly).To(BeTrue())
			g.Expect(rep.Verdict.Conformant).To(BeFalse())
			g.Expect(rep.Verdict.Reason).To(Equal(conformance.MessageOnlyReason))
			for _, id := range []string{conformance.CheckInputRequired, conformance.CheckCancelWorking, conformance.CheckSubscribe} {
				r, _ := rep.Result(id)
				g.Expect(r.Status).To(Equal(conformance.NotRun), id)
			}
		})
	}
}

// Against the same SDK's default handler with an executor that ignores
// CancelTask ("stubborn" tasks): the agent is not conformant, and the
// verdict names the cancel check.
func TestCheckAgentFailsAJSSDKAgentThatIgnoresCancel(t *testing.T) {
	for _, mode := range []string{modeV1, modeREST} {
		t.Run("protocol-"+mode, func(t *testing.T) {
			requireAgents(t)
			t.Parallel()
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := conformance.Run(ctx, conformance.Options{Endpoint: a2a.Endpoint{URL: agents[mode].URL()},
				Texts:  conformance.Texts{Long: "stubborn: ignore CancelTask"},
				Groups: []string{conformance.GroupCard, conformance.GroupCore}, Within: 3 * time.Second})
			g.Expect(err).NotTo(HaveOccurred())
			for _, r := range rep.Results {
				t.Logf("%-34s %-6s %-14s %s", r.ID, r.Level, r.Status, r.Seen)
			}
			res, _ := rep.Result(conformance.CheckCancelWorking)
			g.Expect(res.Status).To(Equal(conformance.Fail), res.Seen)
			g.Expect(rep.Verdict.Conformant).To(BeFalse())
			g.Expect(rep.Verdict.Reason).To(HavePrefix(conformance.CheckCancelWorking + " failed: "))
		})
	}
}
