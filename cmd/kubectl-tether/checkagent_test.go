/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/conformance"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// sampleWorker serves examples/agents/worker in the test process; with a
// token, every request must carry it as a Bearer credential.
func sampleWorker(t *testing.T, token string) string {
	quiet := slog.New(slog.DiscardHandler)
	w := sample.Worker{Name: "worker", Steps: 1, Delay: 10 * time.Millisecond, Spend: 100, Log: quiet}
	srv := agentkit.NewServer(sample.WorkerCard(w.Name), w, agentkit.WithLogger(quiet))
	t.Cleanup(srv.Close)
	var h http.Handler = srv
	if token != "" {
		h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(rw, "unauthorized", http.StatusUnauthorized)
				return
			}
			srv.ServeHTTP(rw, r)
		})
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestCheckAgentRefusesBadCommandLines(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	for _, args := range [][]string{
		{"check-agent"},
		{"check-agent", "a", "--url", "http://127.0.0.1:1"},
		{"check-agent", "a", "--header", "Authorization=s/k"},
		{"check-agent", "--url", "http://127.0.0.1:1", "-o", "xml"},
		{"check-agent", "--url", "http://127.0.0.1:1", "--checks", "card,telepathy"},
		{"check-agent", "--url", "http://127.0.0.1:1", "--header", "Authorization"},
		{"check-agent", "--url", "http://127.0.0.1:1", "--lease-ttl", "10ms"},
	} {
		g := NewWithT(t)
		p := runPlugin(args, nil)
		g.Expect(p.code).To(Equal(exitUsage), "%v: %s", args, p.stderr)
		g.Expect(p.stderr).To(ContainSubstring("Usage:"))
	}
}

func TestCheckAgentByURLPrintsTheTableAndJSON(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig") // --url without --header needs no cluster
	url := sampleWorker(t, "")

	p := runPlugin([]string{"check-agent", "--url", url, "--checks", "card,core"}, nil)
	g.Expect(p.code).To(Equal(exitOK), p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`CHECK\s+TCK\s+LEVEL\s+RESULT\s+SEEN`))
	g.Expect(p.stdout).To(MatchRegexp(`cancel\.working-task\s+CORE-CANCEL-001\s+MUST\s+pass\s+task \S+ canceled`))
	g.Expect(p.stdout).To(MatchRegexp(`\d+ fail \(0 MUST\), 0 not run \(0 MUST\)`))
	g.Expect(p.stdout).To(ContainSubstring("\nconformant: all "))

	p = runPlugin([]string{"check-agent", "--url", url, "--checks", "card", "-o", "json"}, nil)
	g.Expect(p.code).To(Equal(exitOK), p.stderr)
	var rep conformance.Report
	g.Expect(json.Unmarshal([]byte(p.stdout), &rep)).To(Succeed())
	g.Expect(rep.Agent).To(Equal("worker"))
	g.Expect(rep.Results).To(ContainElement(SatisfyAll(
		HaveField("ID", conformance.CheckCardParses), HaveField("TCK", ConsistOf("CARD-DISC-001")),
		HaveField("Level", conformance.Must), HaveField("Status", conformance.Pass))))
	g.Expect(rep.Verdict.Conformant).To(BeTrue())
}

func TestCheckAgentExitsNonZeroOnAMustFailure(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	// An agent whose card advertises an interface at another origin.
	good := sampleWorker(t, "")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(good + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.ReplaceAll(string(body), good, "http://127.0.0.2:9")))
	}))
	t.Cleanup(hs.Close)

	p := runPlugin([]string{"check-agent", "--url", hs.URL, "--checks", "card", "-o", "yaml"}, nil)
	g.Expect(p.code).To(Equal(exitNotConformant), p.stderr)
	g.Expect(p.stderr).To(ContainSubstring("the agent is not conformant: " + conformance.CheckCardOrigins + " failed"))
	g.Expect(p.stdout).To(ContainSubstring("status: fail"))
}

// By Agent name, the Agent's header is read from its Secret as the operator
// reads it: the check passes only when the credential reached the agent.
func TestClusterCheckAgentByName(t *testing.T) {
	startAPIServer(t)
	g := NewWithT(t)
	ctx := context.Background()
	c := apiServer.client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "check-agent-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	url := sampleWorker(t, "s3cret")
	g.Expect(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-token", Namespace: ns.Name, Labels: map[string]string{agentio.AgentCredentialsLabel: "true"}},
		StringData: map[string]string{"value": "Bearer s3cret"},
	})).To(Succeed())
	g.Expect(c.Create(ctx, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns.Name},
		Spec: v1alpha1.AgentSpec{URL: url, Headers: []v1alpha1.AgentHeader{{Name: "Authorization",
			ValueFrom: v1alpha1.SecretKeyRef{Name: "worker-token", Key: "value"}}}}})).To(Succeed())

	p := kubectlTether(ns.Name, "check-agent", "worker", "--checks", "card")
	g.Expect(p.code).To(Equal(exitOK), p.stdout+p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`card\.parses\s+CARD-DISC-001\s+MUST\s+pass`))
	g.Expect(p.stdout).NotTo(ContainSubstring("s3cret"))

	// The same agent by --url without the header is refused at the card.
	p = kubectlTether(ns.Name, "check-agent", "--url", url, "--checks", "card")
	g.Expect(p.code).To(Equal(exitNotConformant), p.stdout+p.stderr)
	g.Expect(p.stdout).To(MatchRegexp(`card\.parses\s+CARD-DISC-001\s+MUST\s+fail`))

	// And with it, from the Secret.
	p = kubectlTether(ns.Name, "check-agent", "--url", url, "--checks", "card", "--header", "Authorization=worker-token/value")
	g.Expect(p.code).To(Equal(exitOK), p.stdout+p.stderr)

	p = kubectlTether(ns.Name, "check-agent", "missing")
	g.Expect(p.code).To(Equal(exitFailure))
	g.Expect(p.stderr).To(ContainSubstring("not found"))
}
