/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// quietLog discards the agents' logs.
var quietLog = slog.New(slog.DiscardHandler)

// workerAgent is examples/agents/worker: the sample agent on pkg/agentkit.
func workerAgent(t *testing.T, opts ...agentkit.Option) http.Handler {
	w := sample.Worker{Name: "worker", Steps: 3, Delay: 100 * time.Millisecond, Spend: 100, Log: quietLog}
	srv := agentkit.NewServer(sample.WorkerCard(w.Name), w,
		append([]agentkit.Option{agentkit.WithLogger(quietLog), agentkit.WithSweepInterval(200 * time.Millisecond)}, opts...)...)
	t.Cleanup(srv.Close)
	return srv
}

func serve(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func runCheck(t *testing.T, g Gomega, url string, groups ...string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Endpoint: a2a.Endpoint{URL: url}, Groups: groups, Within: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("\n" + table(rep))
	return rep
}

func table(rep *Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%-40s %-6s %-14s %s\n", r.ID, r.Level, r.Status, r.Seen)
	}
	return b.String()
}

func TestCheckerPassesTheGoWorker(t *testing.T) {
	g := NewWithT(t)
	rep := runCheck(t, g, serve(t, workerAgent(t)))
	g.Expect(rep.Failed(Must)).To(BeEmpty())
}
