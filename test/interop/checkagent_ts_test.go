/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package interop

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/conformance"
)

// The conformance check (kubectl tether check-agent) against the TypeScript
// agentkit's sample, on JSON-RPC and on HTTP+JSON only: conformant, every
// check passes, the lease and budget ones included (push notifications are
// not advertised; the card signature, a SHOULD, is checked without the
// sample's keys).
func TestCheckAgentPassesTheTSAgentkitSample(t *testing.T) {
	for name, worker := range map[string]**jsAgent{"jsonrpc": &tsWorker, "rest-signed": &tsRESTWorker} {
		t.Run(name, func(t *testing.T) {
			requireAgents(t)
			t.Parallel()
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rep, err := conformance.Run(ctx, conformance.Options{Endpoint: a2a.Endpoint{URL: (*worker).URL()}})
			g.Expect(err).NotTo(HaveOccurred())
			for _, r := range rep.Results {
				t.Logf("%-34s %-6s %-14s %s", r.ID, r.Level, r.Status, r.Seen)
			}
			g.Expect(rep.Verdict.Conformant).To(BeTrue(), rep.Verdict.Reason)
			for _, r := range rep.Results {
				if r.ID == conformance.CheckCardSignature {
					continue
				}
				g.Expect(r.Status).To(BeElementOf(conformance.Pass, conformance.NotAdvertised), "%s: %s", r.ID, r.Seen)
			}
			got := map[string]bool{}
			for _, r := range rep.Results {
				got[r.ID] = true
			}
			for _, id := range []string{conformance.CheckLeaseRefuses, conformance.CheckLeaseRenewal, conformance.CheckLeaseLapse,
				conformance.CheckBudgetReport, conformance.CheckBudgetDeadline, conformance.CheckSchemaAnswers} {
				g.Expect(got).To(HaveKey(id))
			}
		})
	}
}
