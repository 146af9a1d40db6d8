/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// The tests in this file cover what the plugin gained on cli-runtime: -A, -o,
// wait and events, against the same real API server as cluster_test.go.

func TestClusterTreeAcrossNamespacesAndPrinters(t *testing.T) {
	g := NewWithT(t)
	a, b := newScene(t), newScene(t)

	all := runPlugin([]string{"tree", "-A", "--kubeconfig", apiServer.kubeconfig}, nil)
	g.Expect(all.code).To(Equal(0), all.stderr)
	lines := strings.Split(strings.TrimSpace(all.stdout), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^NAMESPACE +NAME +PHASE +REASON`))
	for _, ns := range []string{a.ns, b.ns} {
		g.Expect(all.stdout).To(MatchRegexp(`(?m)^` + ns + ` +root +Running`))
		g.Expect(all.stdout).To(MatchRegexp(`(?m)^` + ns + ` +    └── grandchild +Succeeded`))
	}

	res := kubectlTether(a.ns, "tree", "root", "-o", "json")
	g.Expect(res.code).To(Equal(0), res.stderr)
	var list v1alpha1.DelegationList
	g.Expect(json.Unmarshal([]byte(res.stdout), &list)).To(Succeed())
	g.Expect(list.Kind).To(Equal("DelegationList"))
	names := make([]string, 0, len(list.Items))
	for _, d := range list.Items {
		g.Expect(d.Kind).To(Equal("Delegation"))
		g.Expect(d.Namespace).To(Equal(a.ns))
		names = append(names, d.Name)
	}
	g.Expect(names).To(Equal([]string{"root", "child", "grandchild"}), "tree order")

	res = kubectlTether(a.ns, "tree", "child", "-o", "name")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("delegation.delegation.tether.dev/child\ndelegation.delegation.tether.dev/grandchild\n"))

	res = kubectlTether(a.ns, "tree", "child", "-o", "yaml")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(ContainSubstring("kind: DelegationList"))
	g.Expect(res.stdout).To(ContainSubstring("taskID: task-9d2e"))

	res = kubectlTether(a.ns, "tree", "root", "-o", "wide")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(MatchRegexp(`^NAME +PHASE .* AGE +REPLIES +LEASE UNTIL +DEADLINE +MESSAGE\n`))
	g.Expect(res.stdout).To(ContainSubstring("2026-11-29T20:00:35Z"), "child's lease")

	res = kubectlTether(a.ns, "tree", "-o", "jsonpath={.items[*].metadata.name}")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(Equal("root child grandchild"))
}

func TestClusterHumanOutputEscapesAgentText(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	d := s.get(t, "grandchild")
	d.Status.Outcome.Message = "done\x1b[2J\x1b]52;c;ZXZpbA==\x07"
	d.Status.Result.Text = "clear\x1b[2Jme"
	g.Expect(apiServer.client.Status().Update(context.Background(), d)).To(Succeed())

	res := kubectlTether(s.ns, "describe", "grandchild")
	g.Expect(res.code).To(Equal(0), res.stderr)
	g.Expect(res.stdout).To(ContainSubstring("Message:        done^[[2J^[]52;c;ZXZpbA==^G\n"))
	res = kubectlTether(s.ns, "tree", "root", "-o", "wide")
	g.Expect(res.stdout).NotTo(ContainSubstring("\x1b"))
	g.Expect(res.stdout).To(ContainSubstring("done^[[2J"))
	res = kubectlTether(s.ns, "result", "grandchild")
	g.Expect(res.stdout).To(HavePrefix("clear^[[2Jme\n"))
	res = kubectlTether(s.ns, "result", "grandchild", "--raw")
	g.Expect(res.stdout).To(HavePrefix("clear\x1b[2Jme\n"), "--raw keeps the bytes")
}

// settle writes a phase as the operator would, conditions and
// observedGeneration included, so kstatus reads it.
func settle(t *testing.T, s *scene, name string, phase v1alpha1.Phase, reason string) {
	t.Helper()
	d := s.get(t, name)
	d.Status.Phase = phase
	d.Status.Outcome = &v1alpha1.Outcome{Reason: reason}
	if phase == v1alpha1.PhaseFailed {
		d.Status.Outcome.FailureClass = v1alpha1.FailureInternal
	}
	d.Status.ObservedGeneration = d.Generation
	delegation.SetConditions(d, time.Now())
	if err := apiServer.client.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func TestClusterWait(t *testing.T) {
	s := newScene(t)
	// Only grandchild has conditions the way the operator writes them.
	settle(t, s, "grandchild", v1alpha1.PhaseSucceeded, "Completed")

	t.Run("a succeeded Delegation", func(t *testing.T) {
		g := NewWithT(t)
		res := kubectlTether(s.ns, "wait", "grandchild")
		g.Expect(res.code).To(Equal(0), res.stderr)
		g.Expect(res.stdout).To(Equal("delegation/grandchild Succeeded (Completed)\n"))
	})
	t.Run("a status the operator has not written: timeout", func(t *testing.T) {
		g := NewWithT(t)
		res := kubectlTether(s.ns, "wait", "child", "--timeout", "1s")
		g.Expect(res.code).To(Equal(exitWaitTimeout), res.stderr)
		g.Expect(res.stderr).To(Equal("error: timed out waiting for delegation \"child\"\n"))
	})
	t.Run("a missing Delegation", func(t *testing.T) {
		g := NewWithT(t)
		res := kubectlTether(s.ns, "wait", "nope", "--timeout", "5s")
		g.Expect(res.code).To(Equal(1))
		g.Expect(res.stderr).To(Equal(`error: delegation "nope" not found in namespace "` + s.ns + `"` + "\n"))
	})
	t.Run("a tree that settles while waiting", func(t *testing.T) {
		g := NewWithT(t)
		settle(t, s, "child", v1alpha1.PhaseRunning, "Working")
		var res plugin
		var wg sync.WaitGroup
		wg.Go(func() { res = kubectlTether(s.ns, "wait", "root", "--tree", "--timeout", "60s") })
		// The wait sees child and root still working; then they finish.
		time.Sleep(500 * time.Millisecond)
		settle(t, s, "child", v1alpha1.PhaseSucceeded, "Completed")
		settle(t, s, "root", v1alpha1.PhaseSucceeded, "ChildrenSucceeded")
		wg.Wait()
		g.Expect(res.code).To(Equal(0), res.stderr)
		g.Expect(res.stdout).To(Equal("delegation/root Succeeded (ChildrenSucceeded)\n" +
			"delegation/child Succeeded (Completed)\ndelegation/grandchild Succeeded (Completed)\n"))
	})
}

func TestClusterWaitOutcomes(t *testing.T) {
	tests := []struct {
		phase    v1alpha1.Phase
		reason   string
		wantCode int
	}{
		{v1alpha1.PhaseFailed, "AgentFailed", exitWaitFailed},
		{v1alpha1.PhaseCanceled, "Requested", exitWaitFailed},
		{v1alpha1.PhaseDetached, "Requested", exitWaitFailed},
		{v1alpha1.PhaseInputRequired, "InputRequired", exitWaitInput},
	}
	for _, tc := range tests {
		t.Run(string(tc.phase), func(t *testing.T) {
			g := NewWithT(t)
			s := newScene(t)
			settle(t, s, "child", tc.phase, tc.reason)
			res := kubectlTether(s.ns, "wait", "child", "--timeout", "30s")
			g.Expect(res.code).To(Equal(tc.wantCode), res.stderr)
			g.Expect(res.stdout).To(Equal("delegation/child " + string(tc.phase) + " (" + tc.reason + ")\n"))
		})
	}
	// --all with -A: every Delegation of every namespace, here still working.
	g := NewWithT(t)
	res := runPlugin([]string{"wait", "--all", "-A", "--timeout", "1s", "--kubeconfig", apiServer.kubeconfig}, nil)
	g.Expect(res.code).To(Equal(exitWaitTimeout), res.stderr)
}

func TestClusterEvents(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	event := func(name, regarding, reason, note string, at time.Duration) {
		ev := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: s.ns},
			EventTime:           metav1.NewMicroTime(base.Add(at)),
			ReportingController: "tether.dev/operator",
			ReportingInstance:   "tether-0",
			Action:              "Reconcile",
			Type:                corev1.EventTypeNormal,
			Reason:              reason,
			Note:                note,
			Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Delegation",
				Namespace: s.ns, Name: regarding},
		}
		g.Expect(apiServer.client.Create(ctx, ev)).To(Succeed())
	}
	// Created out of order; printed in the order they happened.
	event("e3", "grandchild", "Succeeded", "task task-9d2e completed", 3*time.Minute)
	event("e1", "child", "Sent", "task task-7c1f sent to researcher", time.Minute)
	event("e2", "grandchild", "Sent", "task task-9d2e sent to writer", 2*time.Minute)
	event("e0", "root", "Started", "group started", 0)

	res := kubectlTether(s.ns, "events", "child")
	g.Expect(res.code).To(Equal(0), res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")[1:]
	reasons := make([]string, 0, len(lines))
	for _, line := range lines {
		reasons = append(reasons, strings.Fields(line)[2]+"@"+strings.Fields(line)[3])
	}
	g.Expect(reasons).To(Equal([]string{"Sent@delegation/child", "Sent@delegation/grandchild",
		"Succeeded@delegation/grandchild"}), res.stdout)

	res = kubectlTether(s.ns, "events", "-o", "json")
	g.Expect(res.code).To(Equal(0), res.stderr)
	var list eventsv1.EventList
	g.Expect(json.Unmarshal([]byte(res.stdout), &list)).To(Succeed())
	names := make([]string, 0, len(list.Items))
	for _, ev := range list.Items {
		names = append(names, ev.Name)
	}
	g.Expect(names).To(Equal([]string{"e0", "e1", "e2", "e3"}))
}

// TestClusterAgentNames pins how users reach tether's kinds next to other
// agent operators: short names, the tether category, and the Agent's Ready
// and Reason columns as kubectl get prints them.
func TestClusterAgentNames(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	dc, err := discovery.NewDiscoveryClientForConfig(apiServer.config)
	g.Expect(err).NotTo(HaveOccurred())
	resources, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	g.Expect(byName["agents"].ShortNames).To(Equal([]string{"tagent"}))
	g.Expect(byName["agents"].Categories).To(Equal([]string{"tether"}))
	g.Expect(byName["delegations"].ShortNames).To(Equal([]string{"dlg"}))
	g.Expect(byName["delegations"].Categories).To(Equal([]string{"tether"}))

	// kubectl get tagent: the server's table has Ready and Reason from the condition.
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "researcher", Namespace: s.ns},
		Spec: v1alpha1.AgentSpec{URL: "https://researcher.example.com"}}
	g.Expect(apiServer.client.Create(context.Background(), agent)).To(Succeed())
	delegation.SetAgentReady(agent, false, "CardUnreachable", "dial tcp: connection refused", time.Now())
	g.Expect(apiServer.client.Status().Update(context.Background(), agent)).To(Succeed())

	rc, err := rest.RESTClientFor(tableClientConfig())
	g.Expect(err).NotTo(HaveOccurred())
	table := &metav1.Table{}
	g.Expect(rc.Get().AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version,
		"namespaces", s.ns, "agents").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Do(context.Background()).Into(table)).To(Succeed())
	var columns []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			columns = append(columns, c.Name)
		}
	}
	g.Expect(columns).To(Equal([]string{"Name", "Ready", "Reason", "URL", "Card", "Age"}))
	g.Expect(table.Rows).To(HaveLen(1))
	g.Expect(table.Rows[0].Cells[1:3]).To(Equal([]any{"False", "CardUnreachable"}))
}

func tableClientConfig() *rest.Config {
	cfg := rest.CopyConfig(apiServer.config)
	cfg.GroupVersion = &metav1.SchemeGroupVersion
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cfg.APIPath = "/apis"
	return cfg
}

func TestClusterStructuredReply(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	file := t.TempDir() + "/decision.json"
	g.Expect(os.WriteFile(file, []byte("{\n  \"decision\": \"approved\"\n}\n"), 0o600)).To(Succeed())
	const ext = "https://example.com/a2a/ext/tool-approval/v1"

	res := kubectlTether(s.ns, "reply", "child", "ok", "--data", `{"ticket": 42}`,
		"--metadata", ext+"=@"+file, "--metadata", "reviewer=alice", "--extension", ext)
	g.Expect(res.code).To(Equal(0), res.stderr)
	replies := s.get(t, "child").Spec.Replies
	g.Expect(replies).To(HaveLen(1))
	r := replies[0]
	g.Expect(r.Text).To(Equal("ok"))
	g.Expect(r.Parts).To(HaveLen(1))
	g.Expect(string(r.Parts[0].Data.Raw)).To(Equal(`{"ticket":42}`))
	g.Expect(string(r.Metadata[ext].Raw)).To(Equal(`{"decision":"approved"}`))
	g.Expect(string(r.Metadata["reviewer"].Raw)).To(Equal(`"alice"`))
	g.Expect(r.Extensions).To(Equal([]string{ext}))

	// Refused before anything is sent.
	for _, args := range [][]string{
		{"reply", "child"},
		{"reply", "child", "--data", "{not json"},
		{"reply", "child", "ok", "--metadata", "novalue"},
		{"reply", "child", "ok", "--extension", "not a uri"},
		{"reply", "child", "ok", "--metadata", "https://tether.dev/a2a/delegation=x/y"},
	} {
		res := kubectlTether(s.ns, args...)
		g.Expect(res.code).To(Equal(exitUsage), "%v: %s", args, res.stderr)
	}
	g.Expect(s.get(t, "child").Spec.Replies).To(HaveLen(1))
}

// Shell completion offers the names of the namespace's Delegations, and of
// its Agents for check-agent.
func TestClusterCompletesNames(t *testing.T) {
	g := NewWithT(t)
	s := newScene(t)
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Name: "researcher", Namespace: s.ns},
		Spec: v1alpha1.AgentSpec{URL: "https://researcher.example.com"}}
	g.Expect(apiServer.client.Create(context.Background(), agent)).To(Succeed())

	names := func(cmd string, args ...string) []string {
		// The flags follow the command; the word being completed comes last.
		res := runPlugin(slices.Concat([]string{"__complete", cmd, "--kubeconfig", apiServer.kubeconfig, "--namespace", s.ns}, args), nil)
		g.Expect(res.code).To(Equal(0), res.stderr)
		var out []string
		for line := range strings.SplitSeq(strings.TrimSpace(res.stdout), "\n") {
			if !strings.HasPrefix(line, ":") { // cobra's last line is the directive
				out = append(out, line)
			}
		}
		return out
	}
	g.Expect(names("describe", "")).To(ConsistOf("root", "child", "grandchild"))
	g.Expect(names("check-agent", "")).To(ConsistOf("researcher"))
	g.Expect(names("describe", "root", "")).To(BeEmpty(), "one name only")
}
