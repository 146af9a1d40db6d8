/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// The test in this file opens `kubectl tether ui` in a real browser, headless
// Chromium, while the tree changes on the real API server.
//
// Chromium comes from the distribution (Debian: apt-get install chromium;
// .ci/run installs it when it is missing). Without it the test fails, unless
// TETHER_SKIP_BROWSER_TESTS=1 says to skip it on a machine without a browser.
// CHROMIUM names another binary. Screenshots go to bin/ui-screenshots, or to
// TETHER_UI_SCREENSHOTS (`make ui-screenshots` writes the ones in docs/images).

var uiURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/[0-9a-f]+/`)

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TETHER_SKIP_BROWSER_TESTS") == "1" {
		t.Skip("no Chromium found and TETHER_SKIP_BROWSER_TESTS=1")
	}
	t.Fatal("the browser test needs Chromium (apt-get install chromium), or TETHER_SKIP_BROWSER_TESTS=1 to skip it")
	return ""
}

// uiScene is a research tree three levels deep, with a task in each phase a
// reader meets: research (group) → survey (Running, under a lease) →
// summarize (Running, then Succeeded while the page is open), and beside
// them a failed fetch, a task that asks for input and one still pending.
// The namespace is name, or a generated one for "".
func uiScene(t *testing.T, name string) string {
	t.Helper()
	startAPIServer(t)
	ctx := context.Background()
	c := apiServer.client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: "ui-"}}
	err := c.Create(ctx, ns)
	if apierrors.IsAlreadyExists(err) { // the test ran before against this API server (-count)
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
		err = c.Create(ctx, ns)
	}
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ago := func(d time.Duration) *metav1.Time { m := metav1.NewTime(now.Add(-d).Truncate(time.Second)); return &m }
	type item struct {
		name, parent, agent string
		status              v1alpha1.DelegationStatus
		lease               bool
	}
	ledger := func(granted, reserved, spent int64) *v1alpha1.BudgetStatus {
		return &v1alpha1.BudgetStatus{
			Granted: v1alpha1.Meters{"tokens": granted}, Reserved: v1alpha1.Meters{"tokens": reserved},
			Spent: v1alpha1.Meters{"tokens": spent}, Left: v1alpha1.Meters{"tokens": granted - reserved - spent},
		}
	}
	items := []item{
		{name: "research", status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, StartTime: ago(4 * time.Minute),
			Outcome:  &v1alpha1.Outcome{Reason: "WaitingForChildren"},
			Children: &v1alpha1.ChildCounts{Active: 3, Failed: 1}, Budget: ledger(50000, 24000, 9500)}},
		{name: "survey", parent: "research", agent: "researcher", lease: true, status: v1alpha1.DelegationStatus{
			Phase: v1alpha1.PhaseRunning, TaskID: "task-7c1f", RemoteState: "working", StartTime: ago(3 * time.Minute),
			Outcome:  &v1alpha1.Outcome{Reason: "Working", Message: "reading source 3 of 5: tidal-energy-review.pdf"},
			Children: &v1alpha1.ChildCounts{Active: 1}, Budget: ledger(20000, 4000, 7300),
			Lease: &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: 5 * time.Minute}, Granted: true,
				GrantedUntil: &metav1.Time{Time: now.Add(4 * time.Minute).Truncate(time.Second)}}}},
		{name: "summarize", parent: "survey", agent: "writer", status: v1alpha1.DelegationStatus{
			Phase: v1alpha1.PhaseRunning, TaskID: "task-9d2e", RemoteState: "working", StartTime: ago(time.Minute),
			Outcome: &v1alpha1.Outcome{Reason: "Working", Message: "drafting the summary"}, Budget: ledger(4000, 0, 1200)}},
		{name: "fetch", parent: "research", agent: "fetcher", status: v1alpha1.DelegationStatus{
			Phase: v1alpha1.PhaseFailed, StartTime: ago(3 * time.Minute), CompletionTime: ago(2 * time.Minute),
			Outcome: &v1alpha1.Outcome{Reason: "AgentFailed", FailureClass: v1alpha1.FailureTransient,
				Message: "upstream returned 503"}, Budget: ledger(2000, 0, 200)}},
		{name: "clarify", parent: "research", agent: "clarifier", status: v1alpha1.DelegationStatus{
			Phase: v1alpha1.PhaseInputRequired, TaskID: "task-31aa", RemoteState: "input-required",
			StartTime: ago(2 * time.Minute), Outcome: &v1alpha1.Outcome{Reason: "InputRequired",
				Message: "Which regions should the survey cover?"}, Budget: ledger(3000, 0, 400)}},
		{name: "report", parent: "research", agent: "writer", status: v1alpha1.DelegationStatus{
			Phase: v1alpha1.PhasePending, Outcome: &v1alpha1.Outcome{Reason: "WaitingForBudget"}}},
	}
	for _, it := range items {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Name: it.name, Namespace: ns.Name},
			Spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: map[string]int64{"tokens": 1000}}}}
		if it.parent != "" {
			d.Spec.ParentRef = &v1alpha1.LocalRef{Name: it.parent}
		}
		if it.agent != "" {
			d.Spec.AgentRef = &v1alpha1.AgentRef{Name: it.agent}
			d.Spec.Message = &v1alpha1.Message{Text: "work on " + it.name}
		}
		if it.lease {
			d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 5 * time.Minute}}
		}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Status = it.status
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatalf("writing the status of %s: %v", it.name, err)
		}
		if it.name == "survey" {
			recordEvent(t, d, "Sent", "task task-7c1f sent to researcher")
			recordEvent(t, d, "LeaseGranted", "lease of 5m0s granted until renewal")
		}
	}
	return ns.Name
}

func recordEvent(t *testing.T, d *v1alpha1.Delegation, reason, note string) {
	t.Helper()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: d.Namespace},
		EventTime:  metav1.NewMicroTime(time.Now()), Type: corev1.EventTypeNormal, Reason: reason, Note: note,
		Action: reason, ReportingController: "delegation.tether.dev/operator", ReportingInstance: "operator-0",
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Delegation",
			Namespace: d.Namespace, Name: d.Name, UID: d.UID},
	}
	if err := apiServer.client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// startUI runs `kubectl tether ui` in ns (with more flags, if any) and
// returns its address once it printed it; the command stops at the end of
// the test.
func startUI(t *testing.T, ns string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	code := make(chan int, 1)
	go func() {
		args := append([]string{"ui", "--kubeconfig", apiServer.kubeconfig, "--namespace", ns}, flags...)
		code <- run(ctx, args, stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("kubectl tether ui exited %d: %s", c, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("kubectl tether ui did not stop")
		}
	})
	g := NewWithT(t)
	g.Eventually(func() string { return uiURL.FindString(stdout.String()) }, 30*time.Second, 20*time.Millisecond).
		ShouldNot(BeEmpty(), "the address is printed: %s %s", stdout.String(), stderr.String())
	return uiURL.FindString(stdout.String())
}

func TestClusterUIIsLocalAndReadOnly(t *testing.T) {
	g := NewWithT(t)
	ns := uiScene(t, "")
	url := startUI(t, ns)
	base := strings.TrimSuffix(url, "/")
	base = base[:strings.LastIndex(base, "/")]
	status := func(method, u, host string) int {
		req, err := http.NewRequest(method, u, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(status(http.MethodGet, url, "")).To(Equal(http.StatusOK))
	g.Expect(status(http.MethodGet, url+"app.js", "")).To(Equal(http.StatusOK))
	g.Expect(status(http.MethodGet, base+"/", "")).To(Equal(http.StatusNotFound), "nothing without the secret path")
	g.Expect(status(http.MethodGet, base+"/0123456789abcdef0123456789abcdef/", "")).To(Equal(http.StatusNotFound))
	g.Expect(status(http.MethodGet, url, "evil.example:80")).To(Equal(http.StatusForbidden), "a rebound DNS name")
	g.Expect(status(http.MethodPost, url+"stream", "")).To(Equal(http.StatusMethodNotAllowed))
	g.Expect(status(http.MethodDelete, url, "")).To(Equal(http.StatusMethodNotAllowed))
}

func TestClusterUIInABrowser(t *testing.T) {
	g := NewWithT(t)
	chromium := chromiumPath(t)
	ns := uiScene(t, "team-research") // the name the screenshots show
	url := startUI(t, ns)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 680))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer stopAlloc()
	browser, stopBrowser := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	defer stopBrowser()
	// The first action starts the browser; it must not run under a timeout.
	g.Expect(chromedp.Do(browser, chromedp.EmulateViewport(1280, 680))).To(Succeed())
	ctx, cancel := context.WithTimeout(browser, 90*time.Second) // generous: a loaded machine
	defer cancel()

	node := func(name, phase string) string {
		return fmt.Sprintf(`#graph g.node[data-key="%s/%s"][data-phase="%s"]`, ns, name, phase)
	}
	g.Expect(chromedp.Do(ctx,
		chromedp.Navigate(url+"#"+ns+"/survey"),
		chromedp.WaitVisible(chromedp.CSS(node("research", "Running"))),
		chromedp.WaitVisible(chromedp.CSS(node("survey", "Running"))),
		chromedp.WaitVisible(chromedp.CSS(node("summarize", "Running"))),
		chromedp.WaitVisible(chromedp.CSS(node("fetch", "Failed"))),
		chromedp.WaitVisible(chromedp.CSS(`#details[data-key="`+ns+`/survey"] li.event[data-reason="LeaseGranted"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
	)).To(Succeed())

	details, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#details")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(details).To(ContainSubstring("reading source 3 of 5: tidal-energy-review.pdf"), "the agent's status message")
	g.Expect(details).To(ContainSubstring("7300 spent · 4000 reserved · 8700 left / 20000"), "the budget bar's numbers")
	g.Expect(details).To(MatchRegexp(`expires in [34]m[0-9]*s? unless renewed`), "the lease countdown")
	g.Expect(details).To(ContainSubstring("task task-7c1f sent to researcher"), "the node's Events")
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#graph .node .bar").length`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bars).To(Equal(5), "a budget bar on every node with a ledger")

	// Collapsing survey hides summarize; expanding shows it again.
	toggle := chromedp.CSS(fmt.Sprintf(`#graph g.node[data-key="%s/survey"] [data-toggle]`, ns))
	g.Expect(chromedp.Do(ctx, chromedp.Click(toggle))).To(Succeed())
	g.Eventually(func() (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#graph g.node[data-key$="/summarize"]').length`))
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(0))
	g.Expect(chromedp.Do(ctx, chromedp.Click(toggle), chromedp.WaitVisible(chromedp.CSS(node("summarize", "Running"))))).To(Succeed())
	saveScreenshot(t, ctx, "kubectl-tether-ui.png")

	// The tree changes on the API server while the page is open.
	d := &v1alpha1.Delegation{}
	g.Expect(apiServer.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "summarize"}, d)).To(Succeed())
	d.Status.Phase, d.Status.RemoteState = v1alpha1.PhaseSucceeded, "completed"
	d.Status.Outcome = &v1alpha1.Outcome{Reason: "Completed", Message: "summary written"}
	d.Status.CompletionTime = &metav1.Time{Time: time.Now()}
	d.Status.Budget.Spent["tokens"], d.Status.Budget.Left["tokens"] = 2600, 1400
	g.Expect(apiServer.client.Status().Update(context.Background(), d)).To(Succeed())
	g.Expect(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(node("summarize", "Succeeded"))))).To(Succeed())
	summary, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#summary")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(summary).To(ContainSubstring("1 Succeeded"))

	// Selecting the node shows its new state.
	g.Expect(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(node("summarize", "Succeeded"))),
		chromedp.WaitVisible(chromedp.CSS(`#details[data-key="`+ns+`/summarize"]`)),
	)).To(Succeed())
	details, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#details")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(details).To(ContainSubstring("summary written"))
	g.Expect(details).To(ContainSubstring("2600 spent · 0 reserved · 1400 left / 4000"))
	// An Event recorded now shows up under the selected node.
	recordEvent(t, d, "Succeeded", "task task-9d2e completed")
	g.Expect(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(
		`#details[data-key="`+ns+`/summarize"] li.event[data-reason="Succeeded"]`)))).To(Succeed())
	saveScreenshot(t, ctx, "kubectl-tether-ui-succeeded.png")

	// With -A: every namespace, each under its name.
	all := startUI(t, "default", "-A")
	g.Expect(chromedp.Do(ctx,
		chromedp.Navigate(all),
		chromedp.WaitVisible(chromedp.CSS(node("summarize", "Succeeded"))),
		chromedp.WaitVisible(chromedp.CSS(`#scope`)),
	)).To(Succeed())
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#graph .ns-label")].map(e => e.textContent)`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(labels).To(ContainElement(ns))
	scope, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#scope")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(scope).To(Equal("all namespaces"))
}

// saveScreenshot writes what the browser shows as a PNG.
func saveScreenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("TETHER_UI_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
