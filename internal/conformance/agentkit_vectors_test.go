/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2aext"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/pkg/agentkit"
)

// kitUnderTest is pkg/agentkit serving the harness executor on a fake clock.
type kitUnderTest struct {
	exec  *harnessExecutor
	clock *clocktesting.FakeClock
	card  *a2a.AgentCard
	// clients by whether they activate the vector file's extension
	activated, plain *a2aclient.Client
}

func startKit(t *testing.T, g Gomega, ext string, maxTTLSeconds float64) *kitUnderTest {
	t.Helper()
	k := &kitUnderTest{exec: newHarnessExecutor(), clock: clocktesting.NewFakeClock(time.Now())}
	srv := agentkit.NewServer(&a2a.AgentCard{
		Name: "vectors", Description: "runs the extension vectors", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
	}, k.exec,
		agentkit.WithClock(k.clock),
		agentkit.WithLogger(slog.New(slog.DiscardHandler)),
		agentkit.WithSweepInterval(20*time.Millisecond),
		agentkit.WithMaxLeaseTTL(time.Duration(maxTTLSeconds*float64(time.Second))))
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, hs.URL)
	g.Expect(err).NotTo(HaveOccurred())
	k.card = card
	k.plain, err = a2aclient.NewFromCard(ctx, card)
	g.Expect(err).NotTo(HaveOccurred())
	k.activated, err = a2aclient.NewFromCard(ctx, card, a2aclient.WithCallInterceptors(a2aext.NewActivator(ext)))
	g.Expect(err).NotTo(HaveOccurred())
	return k
}

func TestAgentkitPassesEveryVector(t *testing.T) {
	files, err := LoadVectors()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		for _, v := range f.Vectors {
			t.Run(v.Name, func(t *testing.T) {
				g := NewWithT(t)
				k := startKit(t, g, f.Extension, v.MaxTTLSeconds())
				switch v.Kind {
				case KindSend:
					k.runSend(t, g, v, "complete")
				case KindCharges:
					meta := map[string]any{tethera2a.BudgetExtensionURI: v.Grant}
					task := k.runSend(t, g, Vector{Name: v.Name, Message: &VectorMetadata{Metadata: meta},
						Expect: VectorExpect{Outcome: "accepted", Settle: v.Expect.Settle, Report: v.Expect.Report}}, chargeText(v.Charges))
					want := make([]string, len(v.Charges))
					for i, c := range v.Charges {
						want[i] = c.Expect
					}
					// The work stops at the first refused charge.
					for i, c := range want {
						if c == "exhausted" {
							want = want[:i+1]
							break
						}
					}
					g.Expect(k.exec.chargesOf(task.ID)).To(Equal(want))
				case KindLeaseTimeline:
					k.runTimeline(g, v)
				}
			})
		}
	}
}

// The card agentkit serves declares both extensions, its lease parameters
// valid against the card-params schema.
func TestAgentkitCardDeclaresBothExtensions(t *testing.T) {
	g := NewWithT(t)
	k := startKit(t, g, tethera2a.LeaseExtensionURI, 600)
	uris := map[string]map[string]any{}
	for _, e := range k.card.Capabilities.Extensions {
		uris[e.URI] = e.Params
	}
	g.Expect(uris).To(HaveKey(tethera2a.BudgetExtensionURI))
	g.Expect(uris).To(HaveKey(tethera2a.LeaseExtensionURI))
	g.Expect(Validate(SchemaLeaseCardParams, uris[tethera2a.LeaseExtensionURI])).To(Succeed())
	g.Expect(uris[tethera2a.LeaseExtensionURI]).To(HaveKeyWithValue("maxTTLSeconds", BeNumerically("==", 600)))
}

func (k *kitUnderTest) runSend(t *testing.T, g Gomega, v Vector, text string) *a2a.Task {
	ctx := context.Background()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.ContextID = "vector-" + v.Name
	if v.Message != nil {
		msg.Metadata = v.Message.Metadata
	}
	req := &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
	if v.Request != nil {
		req.Metadata = v.Request.Metadata
	}
	sentAt := k.clock.Now()
	res, err := k.activated.SendMessage(ctx, req)
	if v.Expect.Outcome == "refused" {
		g.Expect(err).To(MatchError(a2a.ErrInvalidParams))
		list, err := k.plain.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: msg.ContextID})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Tasks).To(BeEmpty(), "a refused send starts nothing")
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	task, ok := res.(*a2a.Task)
	g.Expect(ok).To(BeTrue(), "a task, not a message")
	expectValidMetadata(g, task)
	switch {
	case v.Expect.LeaseNone:
		g.Expect(task.Metadata).NotTo(HaveKey(tethera2a.LeaseExtensionURI))
	case v.Expect.Lease != nil:
		g.Expect(leaseExpiry(task)).To(BeTemporally("==", sentAt.Add(seconds(v.Expect.Lease.ExpiresInSeconds)).UTC()))
	}
	if s := v.Expect.Settle; s != nil {
		var got *a2a.Task
		g.Eventually(func(g Gomega) {
			got, err = k.plain.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got.Status.State)).To(Equal(s.State))
		}).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
		expectValidMetadata(g, got)
		if s.FailureClass != "" {
			g.Expect(got.Status.Message).NotTo(BeNil())
			g.Expect(got.Status.Message.Metadata).To(HaveKeyWithValue(tethera2a.FailureClassMetadataKey, s.FailureClass))
			g.Expect(Validate(SchemaFailureClass, got.Status.Message.Metadata[tethera2a.FailureClassMetadataKey])).To(Succeed())
		}
		if r := v.Expect.Report; r != nil {
			report, ok := settlingReport(got)
			g.Expect(ok).To(BeTrue(), "the settling update carries a budget report")
			g.Expect(ReportMatches(report, r)).To(Succeed())
		}
	}
	return task
}

func (k *kitUnderTest) runTimeline(g Gomega, v Vector) {
	ctx := context.Background()
	start := k.clock.Now()
	at := func(s float64) time.Time { return start.Add(seconds(s)).UTC() }
	text := v.Executor
	if text == "" {
		text = "work"
	}
	var id a2a.TaskID
	for i, step := range v.Steps {
		k.clock.SetTime(at(step.At))
		switch step.Op {
		case "send":
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
			msg.Metadata = map[string]any{tethera2a.LeaseExtensionURI: map[string]any{"ttlSeconds": step.TTLSeconds}}
			res, err := k.activated.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			g.Expect(err).NotTo(HaveOccurred(), "step %d", i)
			task := res.(*a2a.Task)
			id = task.ID
			expectValidMetadata(g, task)
			if e := step.Expect.ExpiresAt; e != nil {
				g.Expect(leaseExpiry(task)).To(BeTemporally("==", at(*e)), "step %d", i)
			}
		case "get":
			c := k.plain
			if step.Activate {
				c = k.activated
			}
			g.Eventually(func(g Gomega) {
				task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
				g.Expect(err).NotTo(HaveOccurred())
				expectValidMetadata(g, task)
				if e := step.Expect.ExpiresAt; e != nil {
					g.Expect(leaseExpiry(task)).To(BeTemporally("==", at(*e)))
				}
				if e := step.Expect.ExpiresAtNotAfter; e != nil {
					g.Expect(leaseExpiry(task)).NotTo(BeTemporally(">", at(*e)))
				}
				if step.Expect.State != "" {
					g.Expect(string(task.Status.State)).To(Equal(step.Expect.State))
				}
			}).WithTimeout(5*time.Second).WithPolling(10*time.Millisecond).Should(Succeed(), "step %d", i)
		case "await":
			g.Eventually(func() string {
				task, err := k.plain.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
				if err != nil {
					return err.Error()
				}
				return string(task.Status.State)
			}).WithTimeout(10*time.Second).WithPolling(10*time.Millisecond).Should(Equal(step.Expect.State), "step %d", i)
		default:
			g.Expect(step.Op).To(BeElementOf("send", "get", "await"), "step %d", i)
		}
	}
}

// expectValidMetadata checks every extension object on a task against its schema.
func expectValidMetadata(g Gomega, task *a2a.Task) {
	if raw, ok := task.Metadata[tethera2a.LeaseExtensionURI]; ok {
		g.Expect(Validate(SchemaLeaseAnswer, raw)).To(Succeed())
	}
	if raw, ok := task.Metadata[tethera2a.BudgetExtensionURI]; ok {
		g.Expect(Validate(SchemaBudgetReport, raw)).To(Succeed())
	}
	if m := task.Status.Message; m != nil {
		if raw, ok := m.Metadata[tethera2a.BudgetExtensionURI]; ok {
			g.Expect(Validate(SchemaBudgetReport, raw)).To(Succeed())
		}
	}
}

func leaseExpiry(task *a2a.Task) time.Time {
	var l tethera2a.LeaseGrantMetadata
	raw, _ := json.Marshal(task.Metadata[tethera2a.LeaseExtensionURI])
	if json.Unmarshal(raw, &l) != nil {
		return time.Time{}
	}
	return l.ExpiresAt
}

// settlingReport is the report a client charges: the status message's,
// else the task's (docs/extensions.md §5.3).
func settlingReport(task *a2a.Task) (tethera2a.BudgetReportMetadata, bool) {
	var r tethera2a.BudgetReportMetadata
	for _, meta := range []map[string]any{statusMeta(task), task.Metadata} {
		if raw, ok := meta[tethera2a.BudgetExtensionURI]; ok {
			b, _ := json.Marshal(raw)
			if json.Unmarshal(b, &r) == nil {
				return r, true
			}
		}
	}
	return r, false
}

func statusMeta(task *a2a.Task) map[string]any {
	if task.Status.Message == nil {
		return nil
	}
	return task.Status.Message.Metadata
}
