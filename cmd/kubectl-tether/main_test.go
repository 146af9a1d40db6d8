/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestRunRejectsBadCommandLinesBeforeConnecting(t *testing.T) {
	// A kubeconfig that cannot be read: reaching connect would exit 1, not 2.
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	tests := []struct {
		args     []string
		wantCode int
	}{
		{[]string{"--help"}, 0},
		{[]string{"tree", "--help"}, 0},
		{[]string{"frobnicate"}, 2},
		{nil, 2},
		{[]string{"--no-such-flag", "tree"}, 2},
		{[]string{"reply", "-n", "default", "only-a-name"}, 2},
		{[]string{"tree", "a", "b"}, 2},
		{[]string{"describe"}, 2},
		{[]string{"tree", "-o", "xml"}, 2},
		{[]string{"wait"}, 2},
		{[]string{"wait", "a", "--all"}, 2},
		{[]string{"wait", "a", "--timeout", "-1s"}, 2},
		{[]string{"version", "extra"}, 2},
		{[]string{"tree", "--watch", "-o", "yaml"}, 2},
		{[]string{"tree", "--timeout", "1m"}, 2},
		{[]string{"tree", "-o", "svg"}, 2},
		{[]string{"events", "-o", "dot"}, 2},
		{[]string{"ui", "extra"}, 2},
		{[]string{"ui", "--port", "70000"}, 2},
	}
	for _, tc := range tests {
		g := NewWithT(t)
		var stdout, stderr bytes.Buffer
		g.Expect(run(context.Background(), tc.args, &stdout, &stderr)).To(Equal(tc.wantCode), "%v: %s", tc.args, stderr.String())
		if tc.wantCode == 2 {
			g.Expect(stdout.String()).To(BeEmpty())
			g.Expect(stderr.String()).To(HavePrefix("error: "))
			g.Expect(stderr.String()).To(ContainSubstring("Usage:"))
		}
	}
}

func TestUsageMessages(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "error: no command given\n"},
		{[]string{"frobnicate"}, `error: unknown command "frobnicate" for "kubectl tether"` + "\n"},
		{[]string{"tree", "a", "b"}, "error: wrong number of arguments for tree\n"},
		{[]string{"reply", "a"}, "error: a reply needs TEXT or --data\n"},
		{[]string{"reply", "a", "b", "c"}, "error: wrong number of arguments for reply\n"},
		{[]string{"describe"}, "error: wrong number of arguments for describe\n"},
	}
	for _, tc := range tests {
		g := NewWithT(t)
		var stdout, stderr bytes.Buffer
		g.Expect(run(context.Background(), tc.args, &stdout, &stderr)).To(Equal(2))
		g.Expect(stderr.String()).To(HavePrefix(tc.want))
	}
}

func TestVersionNeedsNoCluster(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	var stdout, stderr bytes.Buffer
	g.Expect(run(context.Background(), []string{"version"}, &stdout, &stderr)).To(Equal(0), stderr.String())
	g.Expect(stdout.String()).To(MatchRegexp(`^kubectl-tether \S+ \(commit \S+, built \S+, go[0-9.]+, \w+/\w+\)\n$`))
	stdout.Reset()
	g.Expect(run(context.Background(), []string{"version", "-o", "json"}, &stdout, &stderr)).To(Equal(0), stderr.String())
	g.Expect(stdout.String()).To(ContainSubstring(`"version":`))
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		g := NewWithT(t)
		var stdout, stderr bytes.Buffer
		g.Expect(run(context.Background(), []string{"completion", shell}, &stdout, &stderr)).To(Equal(0), stderr.String())
		g.Expect(stdout.String()).To(ContainSubstring("kubectl-tether"), shell)
	}
	// What kubectl_complete-tether runs: the subcommands complete without a cluster.
	g := NewWithT(t)
	var stdout, stderr bytes.Buffer
	g.Expect(run(context.Background(), []string{"__complete", "wa"}, &stdout, &stderr)).To(Equal(0), stderr.String())
	g.Expect(stdout.String()).To(HavePrefix("wait\t"))
}

func TestCommandsAgainstACluster(t *testing.T) {
	items := researchTree()
	objs := make([]client.Object, 0, len(items)+1)
	for i := range items {
		objs = append(objs, &items[i])
	}
	done := dlg("report", "writer", v1alpha1.PhaseSucceeded, time.Minute, func(d *v1alpha1.Delegation) {
		d.Status.Result = &v1alpha1.Result{Text: "the answer", Truncated: true}
	})
	objs = append(objs, &done)

	tests := []struct {
		name                   string
		args                   []string
		wantStdout, wantStderr string
		wantErr                string
	}{
		{name: "tree", args: []string{"tree", "search"},
			wantStdout: "NAME        PHASE       REASON        AGENT      TASK    BUDGET LEFT/SPENT            AGE\n" +
				"search      Succeeded   Completed     searcher   t-101   calls=0/3,tokens=1500/3500   9m\n" +
				"└── fetch   Failed      Unreachable   fetcher    -       -                            8m\n"},
		{name: "tree of a missing root", args: []string{"tree", "nope"},
			wantErr: `delegation "nope" not found in namespace "default"`},
		{name: "result with a truncation note", args: []string{"result", "report"},
			wantStdout: "the answer\n", wantStderr: "note: the result was cut to fit in the Delegation's status\n"},
		{name: "describe a missing Delegation", args: []string{"describe", "nope"},
			wantErr: `delegations.delegation.tether.dev "nope" not found`},
		{name: "reply", args: []string{"reply", "ask-user", "EU only"},
			wantStdout: "delegation \"ask-user\": reply 1 queued; the operator sends it to the waiting task\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			e := &env{c: fakeClient(interceptor.Funcs{}, objs...), ns: "default", stdout: &stdout, stderr: &stderr, now: now}
			bodies := map[string]func(context.Context, *env, []string) error{
				"tree": treeCmd, "describe": describeCmd, "result": resultCmd, "reply": replyCmd, "cancel": cancelCmd,
			}
			err := bodies[tc.args[0]](context.Background(), e, tc.args[1:])
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stdout.String()).To(Equal(tc.wantStdout))
			g.Expect(stderr.String()).To(Equal(tc.wantStderr))
		})
	}
}

func TestUseColor(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("NO_COLOR", "")
	var buf bytes.Buffer
	g.Expect(useColor(&buf, false)).To(BeFalse(), "not a terminal")
	g.Expect(useColor(os.Stdout, true)).To(BeFalse(), "--no-color")
	t.Setenv("NO_COLOR", "1")
	g.Expect(useColor(os.Stdout, false)).To(BeFalse(), "NO_COLOR")
}
