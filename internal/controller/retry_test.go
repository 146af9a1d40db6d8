/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// flakyAgent is an agent on a2a-go's default handlers (JSON-RPC, the
// in-memory task store) whose first failFirst tasks of each context fail
// with class Transient; later ones complete. Every task reports spent
// tokens. It keeps the message id of every task it started, in order.
type flakyAgent struct {
	server    *httptest.Server
	failFirst int
	spent     int64

	// dropAnswerOf makes the agent take the n-th first message (from 1)
	// and drop the connection instead of answering: the send's answer is
	// lost, the task exists.
	dropAnswerOf int
	// cancelDelay holds every CancelTask this long before the agent sees it.
	cancelDelay time.Duration

	mu       sync.Mutex
	contexts map[string]int
	messages []string
	sends    int
}

func newFlakyAgent(t *testing.T, failFirst int, spent int64) *flakyAgent {
	fa := &flakyAgent{failFirst: failFirst, spent: spent, contexts: map[string]int{}}
	mux := http.NewServeMux()
	fa.server = httptest.NewServer(mux)
	t.Cleanup(fa.server.Close)
	card := &a2a.AgentCard{
		Name:                "flaky",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(fa.server.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"},
		DefaultOutputModes:  []string{"text"},
		Skills:              []a2a.AgentSkill{{ID: "work", Name: "Work"}},
	}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: func(context.Context) (string, error) { return "operator", nil },
	})
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", fa.dropping(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(fa, a2asrv.WithTaskStore(store)))))
	return fa
}

// dropping loses the answer to the send dropAnswerOf names.
func (fa *flakyAgent) dropping(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method == "CancelTask" {
			time.Sleep(fa.cancelDelay)
		}
		if req.Method == "SendMessage" {
			fa.mu.Lock()
			fa.sends++
			drop := fa.sends == fa.dropAnswerOf
			fa.mu.Unlock()
			if drop {
				next.ServeHTTP(httptest.NewRecorder(), r)
				if hj, ok := w.(http.Hijacker); ok {
					conn, _, _ := hj.Hijack()
					_ = conn.Close()
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (fa *flakyAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		fa.mu.Lock()
		fa.contexts[ec.Message.ContextID]++
		n := fa.contexts[ec.Message.ContextID]
		fa.messages = append(fa.messages, ec.Message.ID)
		fa.mu.Unlock()
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		report := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("busy, try again"))
		report.Metadata = map[string]any{budgetExtension: map[string]any{"spent": map[string]any{"tokens": fa.spent}}}
		if n <= fa.failFirst {
			report.Metadata["failureClass"] = "Transient"
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, report), nil)
			return
		}
		report.Parts = []*a2a.Part{a2a.NewTextPart("done")}
		yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("done on try "+string(rune('0'+n)))), nil)
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, report), nil)
	}
}

func (fa *flakyAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Messages are the message ids of the tasks the agent started.
func (fa *flakyAgent) Messages() []string {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	return append([]string(nil), fa.messages...)
}

func retryPolicy(maxAttempts int32, initial time.Duration) *v1alpha1.RetryPolicy {
	return &v1alpha1.RetryPolicy{MaxAttempts: maxAttempts, On: []v1alpha1.RetryClass{"Transient"},
		Backoff: &v1alpha1.Backoff{Initial: &metav1.Duration{Duration: initial}}}
}

func toAgent(name string) func(*v1alpha1.Delegation) {
	return func(d *v1alpha1.Delegation) { d.Spec.AgentRef = &v1alpha1.AgentRef{Name: name} }
}

func budgetOf(n int64) func(*v1alpha1.Delegation) { return withBudget(v1alpha1.Meters{"tokens": n}) }

// An agent that fails the first two tasks of a context transiently: with
// maxAttempts 3 the Delegation succeeds on its third task, each a new task
// with its own message id in the same context, and the parent is charged
// every attempt's report once.
func TestRetryTransientFailuresThenSucceeds(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 2, 40)
	e.createAgent("flaky", fa.server.URL)
	e.create(e.group("root", v1alpha1.Meters{"tokens": 1000}))
	e.create(e.task("child", "work", toAgent("flaky"), childOf("root"), budgetOf(300), func(d *v1alpha1.Delegation) {
		d.Spec.Retry = retryPolicy(3, 100*time.Millisecond)
	}))
	d := e.waitPhase("child", v1alpha1.PhaseSucceeded)
	uid := string(d.UID)
	e.g.Expect(fa.Messages()).To(Equal([]string{"tether-" + uid, "tether-" + uid + "-2", "tether-" + uid + "-3"}), statusJSON(d))
	e.g.Expect(d.Status.ContextID).To(Equal("tether-" + uid))
	e.g.Expect(d.Status.Attempt).To(Equal(int32(3)))
	e.g.Expect(d.Status.MaxAttempts).To(Equal(int32(3)))
	e.g.Expect(d.Status.Attempts).To(HaveLen(3))
	tasks := map[string]bool{}
	for i, a := range d.Status.Attempts {
		e.g.Expect(a.Attempt).To(Equal(int32(i + 1)))
		e.g.Expect(a.TaskID).NotTo(BeEmpty())
		e.g.Expect(a.Spent).To(Equal(v1alpha1.Meters{"tokens": 40}))
		tasks[a.TaskID] = true
	}
	e.g.Expect(tasks).To(HaveLen(3), "three distinct tasks")
	e.g.Expect(d.Status.Attempts[0].Outcome.FailureClass).To(Equal(v1alpha1.FailureTransient))
	e.g.Expect(d.Status.Attempts[2].Outcome.Reason).To(Equal(delegation.ReasonCompleted))
	e.g.Expect(d.Status.TaskID).To(Equal(d.Status.Attempts[2].TaskID))
	e.g.Expect(d.Status.Budget.Spent).To(Equal(v1alpha1.Meters{"tokens": 120}))
	e.g.Eventually(func(g Gomega) {
		root := e.get("root")
		g.Expect(root.Status.Budget.Reservations).To(BeEmpty())
		g.Expect(root.Status.Budget.Charged).To(Equal(v1alpha1.Meters{"tokens": 120}), "each attempt's report charged once")
	}, eventually, tick).Should(Succeed())
	e.g.Consistently(fa.Messages, time.Second, tick).Should(HaveLen(3), "no fourth task")
}

// A retry that what is left of the reservation cannot cover does not start.
func TestRetryThatWouldExceedTheReservationDoesNotStart(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 2, 100)
	e.createAgent("flaky", fa.server.URL)
	e.create(e.group("root", v1alpha1.Meters{"tokens": 1000}))
	e.create(e.task("child", "work", toAgent("flaky"), childOf("root"), budgetOf(100), func(d *v1alpha1.Delegation) {
		d.Spec.Retry = retryPolicy(3, 100*time.Millisecond)
	}))
	d := e.waitPhase("child", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRetryBudgetExhausted), statusJSON(d))
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureBudgetExhausted))
	e.g.Expect(d.Status.Attempts).To(HaveLen(1))
	e.g.Consistently(fa.Messages, time.Second, tick).Should(HaveLen(1), "the retry never started")
	e.g.Eventually(func(g Gomega) {
		g.Expect(e.get("root").Status.Budget.Charged).To(Equal(v1alpha1.Meters{"tokens": 100}))
	}, eventually, tick).Should(Succeed())
}

// A parent deleted while its child waits for its next attempt ends the
// backoff: no new task, the child Canceled. The child inherits the retry
// policy of its group.
func TestRetryParentDeletedDuringBackoff(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 2, 0)
	e.createAgent("flaky", fa.server.URL)
	root := e.group("root", nil)
	root.Spec.Budget, root.Spec.Retry = nil, retryPolicy(3, 20*time.Second)
	e.create(root)
	e.create(e.task("child", "work", toAgent("flaky"), childOf("root")))
	e.g.Eventually(func(g Gomega) {
		d := e.get("child")
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRetryScheduled))
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning))
		g.Expect(d.Status.Attempt).To(Equal(int32(2)))
		g.Expect(d.Status.TaskID).To(BeEmpty())
	}, eventually, tick).Should(Succeed())
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("root"))).To(Succeed())
	d := e.waitPhase("child", v1alpha1.PhaseCanceled)
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonParentDeleted), statusJSON(d))
	e.g.Expect(fa.Messages()).To(HaveLen(1), "no task for the second attempt")
}

// An operator stopped during a backoff, and another started in its place,
// make exactly one next attempt.
func TestRetryOperatorStoppedDuringBackoffSendsOnce(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 1, 0)
	e.createAgent("flaky", fa.server.URL)
	e.create(e.task("child", "work", toAgent("flaky"), func(d *v1alpha1.Delegation) { d.Spec.Retry = retryPolicy(2, 2*time.Second) }))
	e.g.Eventually(func(g Gomega) {
		d := e.get("child")
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonRetryScheduled))
	}, eventually, tick).Should(Succeed())
	e.op.Stop()
	startOperator(t, e.ns, testOptions())
	d := e.waitPhase("child", v1alpha1.PhaseSucceeded)
	e.g.Consistently(fa.Messages, time.Second, tick).Should(HaveLen(2), statusJSON(d))
	e.g.Expect(fa.Messages()[1]).To(Equal("tether-" + string(d.UID) + "-2"))
	e.g.Expect(d.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationSendAttempt, "2"))
}

// The answer to a later attempt's send is lost: the look-up by context
// finds that attempt's own task (not the earlier attempt's, which shares
// the context) and adopts it; nothing is sent a third time.
func TestRetryLostAnswerOfALaterAttemptIsLookedUpNotSentAgain(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 1, 0)
	fa.dropAnswerOf = 2
	e.createAgent("flaky", fa.server.URL)
	e.create(e.task("child", "work", toAgent("flaky"), func(d *v1alpha1.Delegation) { d.Spec.Retry = retryPolicy(3, 100*time.Millisecond) }))
	d := e.waitPhase("child", v1alpha1.PhaseSucceeded)
	e.g.Consistently(fa.Messages, time.Second, tick).Should(HaveLen(2), statusJSON(d))
	e.g.Expect(d.Status.Attempts).To(HaveLen(2))
	e.g.Expect(d.Status.Attempts[1].TaskID).NotTo(Equal(d.Status.Attempts[0].TaskID))
	e.g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonCompleted))
}

// A group's retry policy reaches its grandchildren through a group that
// sets none: the leaf retries under the root's policy, a task beside it
// with its own policy keeps its own.
func TestRetryPolicyInheritedThroughGroups(t *testing.T) {
	e := setup(t)
	fa := newFlakyAgent(t, 1, 0)
	e.createAgent("flaky", fa.server.URL)
	root := e.group("root", nil)
	root.Spec.Budget, root.Spec.Retry = nil, retryPolicy(3, 100*time.Millisecond)
	e.create(root)
	mid := e.group("mid", nil)
	mid.Spec.Budget = nil
	childOf("root")(mid)
	e.create(mid)
	e.create(e.task("leaf", "work", toAgent("flaky"), childOf("mid")))
	e.create(e.task("own", "work", toAgent("flaky"), childOf("mid"), func(d *v1alpha1.Delegation) {
		d.Spec.Retry = retryPolicy(1, 100*time.Millisecond)
	}))
	leaf := e.waitPhase("leaf", v1alpha1.PhaseSucceeded)
	e.g.Expect(leaf.Status.Attempt).To(Equal(int32(2)), statusJSON(leaf))
	e.g.Expect(leaf.Status.MaxAttempts).To(Equal(int32(3)), "the root's maxAttempts")
	e.g.Expect(leaf.Status.Attempts).To(HaveLen(2))
	own := e.waitPhase("own", v1alpha1.PhaseFailed)
	e.g.Expect(own.Status.MaxAttempts).To(Equal(int32(1)), statusJSON(own))
	e.g.Expect(own.Status.Attempts).To(HaveLen(1), "its own policy: one attempt")
	e.g.Expect(fa.Messages()).To(ConsistOf("tether-"+string(leaf.UID), "tether-"+string(leaf.UID)+"-2", "tether-"+string(own.UID)))
	e.waitPhase("mid", v1alpha1.PhaseFailed)
}

// A cancel of an ended attempt's task, asked again by a pass on a cache that
// did not show the attempt's end yet, is still on its way when the next
// attempt's send is due: the next attempt waits for it and is sent once it
// is answered, instead of having every send refused for a cancel that is
// not its own (the Delegation stayed Pending, reason Sending, for good).
func TestRetryNotFencedByACancelOfAnEarlierAttempt(t *testing.T) {
	var r *DelegationReconciler
	e := setupWithReconciler(t, testOptions(), func(dr *DelegationReconciler) { r = dr })
	fa := newFlakyAgent(t, 1, 10)
	fa.cancelDelay = 2 * time.Second
	e.createAgent("flaky", fa.server.URL)
	e.create(e.task("child", "work", toAgent("flaky"), func(d *v1alpha1.Delegation) {
		d.Spec.Retry = retryPolicy(2, time.Second)
	}))
	var d *v1alpha1.Delegation
	e.g.Eventually(func(g Gomega) {
		d = e.get("child")
		g.Expect(d.Status.Attempts).To(HaveLen(1))
		g.Expect(d.Status.Attempt).To(Equal(int32(2)))
	}, eventually, 10*time.Millisecond).Should(Succeed())
	first := d.Status.Attempts[0].TaskID
	var agent v1alpha1.Agent
	e.g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "flaky"}, &agent)).To(Succeed())
	t0 := time.Now()
	e.g.Expect(r.Calls.Cancel(client.ObjectKeyFromObject(d), r.target(d, &agent), agentio.CancelRequest{TaskID: first})).To(BeTrue())

	d = e.waitPhase("child", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Attempts).To(HaveLen(2), statusJSON(d))
	e.g.Expect(fa.Messages()).To(HaveLen(2), "one task per attempt")
	t.Logf("the second attempt succeeded %v after the stale cancel was asked", time.Since(t0).Round(time.Millisecond))
}
