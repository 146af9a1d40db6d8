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

func TestParseCommand(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"tree"}},
		{args: []string{"tree", "root"}},
		{args: []string{"tree", "a", "b"}, wantErr: "wrong number of arguments for tree"},
		{args: []string{"describe", "a"}},
		{args: []string{"describe"}, wantErr: "wrong number of arguments for describe"},
		{args: []string{"result", "a"}},
		{args: []string{"reply", "a", "some text"}},
		{args: []string{"reply", "a"}, wantErr: "wrong number of arguments for reply"},
		{args: []string{"cancel", "a"}},
		{args: []string{"delete", "a"}, wantErr: `unknown command "delete"`},
		{args: nil, wantErr: "no command given"},
	}
	for _, tc := range tests {
		g := NewWithT(t)
		_, err := parseCommand(tc.args)
		if tc.wantErr == "" {
			g.Expect(err).NotTo(HaveOccurred(), "%v", tc.args)
		} else {
			g.Expect(err).To(MatchError(tc.wantErr), "%v", tc.args)
		}
	}
}

func TestRunRejectsBadCommandLinesBeforeConnecting(t *testing.T) {
	// A kubeconfig that cannot be read: reaching connect would exit 1, not 2.
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	tests := []struct {
		args     []string
		wantCode int
	}{
		{[]string{"--help"}, 0},
		{[]string{"frobnicate"}, 2},
		{[]string{"--no-such-flag", "tree"}, 2},
		{[]string{"reply", "-n", "default", "only-a-name"}, 2},
	}
	for _, tc := range tests {
		g := NewWithT(t)
		var stdout, stderr bytes.Buffer
		g.Expect(run(context.Background(), tc.args, &stdout, &stderr)).To(Equal(tc.wantCode), "%v: %s", tc.args, stderr.String())
		g.Expect(stdout.String()).To(BeEmpty())
	}
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
			wantStdout: "NAME       PHASE      REASON       AGENT     TASK   BUDGET LEFT/SPENT           AGE\n" +
				"search     Succeeded  Completed    searcher  t-101  calls=0/3,tokens=1500/3500  9m\n" +
				"└── fetch  Failed     Unreachable  fetcher   -      -                           8m\n"},
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
			cmd, err := parseCommand(tc.args)
			g.Expect(err).NotTo(HaveOccurred())
			err = cmd(context.Background(), e)
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
