/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The tests in this file follow a tree with tree --watch while its status
// changes on the real API server, and draw it with -o dot|mermaid.

// syncBuffer is an output a test reads while the plugin still writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startWatch runs `tree ARGS --watch` in the background; the returned
// function waits for it to end.
func startWatch(ns string, args ...string) (stdout, stderr *syncBuffer, wait func() int) {
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	code := make(chan int, 1)
	full := append([]string{"tree"}, args...)
	full = append(full, "--watch", "--kubeconfig", apiServer.kubeconfig, "--namespace", ns)
	go func() { code <- run(context.Background(), full, stdout, stderr) }()
	return stdout, stderr, func() int {
		select {
		case c := <-code:
			return c
		case <-time.After(90 * time.Second):
			return -1
		}
	}
}

func TestClusterTreeWatchFollowsATreeToItsEnd(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	settle(t, s, "grandchild", v1alpha1.PhaseSucceeded, "Completed")
	settle(t, s, "child", v1alpha1.PhaseRunning, "Working")

	stdout, stderr, wait := startWatch(s.ns, "root", "--timeout", "60s")
	g.Eventually(stdout.String, 30*time.Second, 50*time.Millisecond).Should(
		MatchRegexp(`(?m)^└── child +Running +Working +researcher`), "the first frame shows child working")

	// The budget moves: a new frame with the new numbers.
	d := s.get(t, "child")
	d.Status.Budget.Spent["tokens"], d.Status.Budget.Left["tokens"] = 2000, 2000
	g.Expect(apiServer.client.Status().Update(context.Background(), d)).To(Succeed())
	g.Eventually(stdout.String, 30*time.Second, 50*time.Millisecond).Should(ContainSubstring("tokens=2000/2000"))

	settle(t, s, "child", v1alpha1.PhaseSucceeded, "Completed")
	settle(t, s, "root", v1alpha1.PhaseSucceeded, "ChildrenSucceeded")
	g.Expect(wait()).To(Equal(0), stderr.String())
	g.Expect(stderr.String()).To(BeEmpty())

	frames := strings.Split(stdout.String(), "\n\n")
	g.Expect(len(frames)).To(BeNumerically(">=", 3), "a frame per change: %q", stdout.String())
	g.Expect(stdout.String()).NotTo(ContainSubstring("\x1b"), "frames one after another, not redrawn, off a terminal")
	for _, f := range frames {
		g.Expect(f).To(HavePrefix("Watching tree \"root\"\nNAME "))
	}
	last := frames[len(frames)-1]
	g.Expect(last).To(MatchRegexp(`(?m)^root +Succeeded +ChildrenSucceeded`))
	g.Expect(last).To(MatchRegexp(`(?m)^└── child +Succeeded +Completed`))
	g.Expect(last).To(MatchRegexp(`(?m)^    └── grandchild +Succeeded +Completed`))
}

func TestClusterTreeWatchExitCodes(t *testing.T) {
	t.Run("a child fails: 3", func(t *testing.T) {
		g := NewWithT(t)
		s := newScene(t)
		settle(t, s, "grandchild", v1alpha1.PhaseSucceeded, "Completed")
		settle(t, s, "root", v1alpha1.PhaseRunning, "WaitingForChildren")
		stdout, stderr, wait := startWatch(s.ns, "root")
		g.Eventually(stdout.String, 30*time.Second, 50*time.Millisecond).Should(ContainSubstring("Watching"))
		settle(t, s, "child", v1alpha1.PhaseFailed, "AgentFailed")
		settle(t, s, "root", v1alpha1.PhaseFailed, "ChildFailed")
		g.Expect(wait()).To(Equal(exitWaitFailed), stderr.String())
		g.Expect(stderr.String()).To(Equal("error: the tree under \"root\" did not succeed\n"))
		g.Expect(stdout.String()).To(MatchRegexp(`(?m)^└── child +Failed +AgentFailed`))
	})
	t.Run("a task asks for input: 5", func(t *testing.T) {
		g := NewWithT(t)
		s := newScene(t)
		settle(t, s, "grandchild", v1alpha1.PhaseSucceeded, "Completed")
		settle(t, s, "child", v1alpha1.PhaseInputRequired, "InputRequired")
		_, stderr, wait := startWatch(s.ns, "child")
		g.Expect(wait()).To(Equal(exitWaitInput), stderr.String())
	})
	t.Run("the tree does not settle in time: 4", func(t *testing.T) {
		g := NewWithT(t)
		s := newScene(t)
		stdout, stderr, wait := startWatch(s.ns, "root", "--timeout", "2s")
		g.Expect(wait()).To(Equal(exitWaitTimeout), stderr.String())
		g.Expect(stderr.String()).To(Equal("error: timed out waiting for the tree under \"root\"\n"))
		g.Expect(stdout.String()).To(MatchRegexp(`(?m)^root +Running`), "the tree was drawn while waiting")
	})
	t.Run("a missing tree: 1", func(t *testing.T) {
		g := NewWithT(t)
		s := newScene(t)
		stdout, stderr, wait := startWatch(s.ns, "nope")
		g.Expect(wait()).To(Equal(exitFailure))
		g.Expect(stderr.String()).To(Equal("error: delegation \"nope\" not found in namespace \"" + s.ns + "\"\n"))
		g.Expect(stdout.String()).To(BeEmpty())
	})
}

func TestClusterTreeGraphs(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	res := kubectlTether(s.ns, "tree", "root", "-o", "mermaid")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(HavePrefix("flowchart TD\n" +
		`  n0["root<br/>(group)<br/>Running (WaitingForChildren)<br/>left/spent calls=13/2,tokens=4500/1500"]:::running` + "\n" +
		`  n1["child<br/>researcher<br/>Running (Working)<br/>left/spent calls=3/2,tokens=2800/1200"]:::running` + "\n" +
		`  n2["grandchild<br/>writer<br/>Succeeded (Completed)<br/>left/spent calls=0/1,tokens=700/300"]:::succeeded` + "\n" +
		"  n0 --> n1\n  n1 --> n2\n"))

	res = runPlugin([]string{"tree", "-A", "-o", "dot", "--kubeconfig", apiServer.kubeconfig}, nil)
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(HavePrefix("digraph tether {\n"))
	g.Expect(res.stdout).To(ContainSubstring(`label="` + s.ns + `";`))
}
