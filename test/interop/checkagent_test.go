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
			g.Expect(rep.Failed(conformance.Must)).To(BeEmpty())
			for _, id := range []string{conformance.CheckCardParses, conformance.CheckCardReachable, conformance.CheckGetUnknownTask,
				conformance.CheckInputRequired, conformance.CheckCancelWorking, conformance.CheckCancelFinished,
				conformance.CheckGetHistory, conformance.CheckBoundsIDs, conformance.CheckSchemaAnswers} {
				g.Expect(got[id].Status).To(Equal(conformance.Pass), id)
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
