/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/examples/agents/sample"
	"github.com/tether-dev/tether/internal/delegation"
)

// Budgets with real agents: children reserve from their parent's ledger
// before they are sent, and settle it once with the refund rules.

// holdText keeps a worker busy without spending or changing its status.
const holdText = "forever spend=0 delay=1h"

// sub is the env for a subtest: same namespace, agent and operator.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t, c.g = t, NewWithT(t)
	return &c
}

// waitReason waits until the Delegation is in phase with the reason.
func (e *env) waitReason(name string, phase v1alpha1.Phase, reason string) *v1alpha1.Delegation {
	e.t.Helper()
	var d *v1alpha1.Delegation
	e.g.Eventually(func(g Gomega) {
		d = e.get(name)
		g.Expect(d.Status.Phase).To(Equal(phase), "outcome: %+v", d.Status.Outcome)
		g.Expect(d.Status.Outcome).NotTo(BeNil())
		g.Expect(d.Status.Outcome.Reason).To(Equal(reason), "outcome: %+v", d.Status.Outcome)
	}, eventually, tick).Should(Succeed())
	return d
}

func TestBudgetFiftyChildrenRaceForOneParent(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL(), pollEvery(2*time.Second))
	e.create(e.group("pool", v1alpha1.Meters{tokens: 1000}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)

	const n, fits = 50, 10
	names := make([]string, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		names[i] = fmt.Sprintf("c-%02d", i)
		d := e.kitTask(names[i], "kit", holdText, childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100}))
		wg.Go(func() { e.g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed()) })
	}
	wg.Wait()

	// classify splits the children into sent and waiting for budget.
	classify := func(g Gomega) (sent, short []*v1alpha1.Delegation) {
		var list v1alpha1.DelegationList
		g.Expect(k8sClient.List(context.Background(), &list)).To(Succeed())
		for i := range list.Items {
			d := &list.Items[i]
			if d.Namespace != e.ns || d.Spec.ParentRef == nil {
				continue
			}
			switch {
			case d.Status.TaskID != "":
				sent = append(sent, d)
			case d.Status.Phase == v1alpha1.PhasePending && d.Status.Outcome != nil &&
				d.Status.Outcome.Reason == delegation.ReasonBudgetExhausted && d.Status.SendStarted == nil:
				short = append(short, d)
			}
		}
		return sent, short
	}
	e.g.Eventually(func(g Gomega) {
		sent, short := classify(g)
		g.Expect(sent).To(HaveLen(fits))
		g.Expect(short).To(HaveLen(n - fits))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	t.Logf("%d children raced for 1000 tokens: %d sent and %d waiting after %v",
		n, fits, n-fits, time.Since(start).Round(time.Millisecond))

	// Nothing more goes out while the ten hold their reservations.
	e.g.Consistently(func() int { return len(ka.Sends(e.ns, "")) }, 2*time.Second, tick).Should(Equal(fits))
	sent, short := classify(e.g)
	e.g.Expect(sent).To(HaveLen(fits))
	e.g.Expect(short).To(HaveLen(n - fits))
	for _, d := range short {
		e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("0 left"))
		e.g.Expect(ka.Sends(e.ns, d.Name)).To(BeEmpty(), "%s was never sent", d.Name)
	}
	for _, d := range sent {
		e.g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseRunning))
		e.g.Expect(ledger(d).Granted).To(Equal(v1alpha1.Meters{tokens: 100}))
		calls := ka.Sends(e.ns, d.Name)
		e.g.Expect(calls).To(HaveLen(1), "%s was sent once", d.Name)
		e.g.Expect(calls[0].Budget).To(Equal(map[string]int64{tokens: 100}))
	}

	pool := ledger(e.get("pool"))
	e.g.Expect(pool.Reservations).To(HaveLen(fits))
	granted := int64(0)
	for _, r := range pool.Reservations {
		granted += r.Meters[tokens]
	}
	e.g.Expect(granted).To(BeNumerically("<=", 1000), "the grants never exceed the limit")
	e.g.Expect(pool.Reserved).To(Equal(v1alpha1.Meters{tokens: 1000}))
	e.g.Expect(pool.Left).To(Equal(v1alpha1.Meters{tokens: 0}))
	expectExactLedger(e.g, pool)

	// Cancelling the ten keeps their reservations as spent.
	for _, d := range sent {
		e.update(d.Name, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	}
	for _, d := range sent {
		e.waitReason(d.Name, v1alpha1.PhaseCanceled, delegation.ReasonRequested)
		e.g.Expect(ka.Cancelled(d.Status.TaskID)).To(BeTrue())
	}
	e.g.Eventually(func(g Gomega) {
		pool := ledger(e.get("pool"))
		g.Expect(pool.Reservations).To(BeEmpty())
		g.Expect(pool.Charged).To(Equal(v1alpha1.Meters{tokens: 1000}), "charged 100 for each cancelled child")
		g.Expect(pool.Left).To(Equal(v1alpha1.Meters{tokens: 0}))
		expectExactLedger(g, pool)
	}, eventually, tick).Should(Succeed())
	// Nothing freed up, so the forty still wait and were never sent.
	e.g.Consistently(func() int { return len(ka.Sends(e.ns, "")) }, time.Second, tick).Should(Equal(fits))
	_, short = classify(e.g)
	e.g.Expect(short).To(HaveLen(n - fits))
}

// The refund table (docs/extensions.md): what a child that reserved 100
// tokens costs its parent, by how it ended.
func TestBudgetRefundTable(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())

	// run creates a group holding 100 tokens and one child reserving all of
	// it, lets end finish the child, and returns the group's ledger once the
	// reservation is settled.
	run := func(e *env, name, agent, text string, end func(child string) *v1alpha1.Delegation,
		mutate ...func(*v1alpha1.Delegation)) (*v1alpha1.Delegation, v1alpha1.BudgetStatus) {
		e.t.Helper()
		parent, child := "g-"+name, name
		e.create(e.group(parent, v1alpha1.Meters{tokens: 100}))
		e.waitPhase(parent, v1alpha1.PhaseRunning)
		e.create(e.kitTask(child, agent, text, append(mutate, childOf(parent), withBudget(v1alpha1.Meters{tokens: 100}))...))
		d := end(child)
		var b v1alpha1.BudgetStatus
		e.g.Eventually(func(g Gomega) {
			b = ledger(e.get(parent))
			g.Expect(b.Reservations).To(BeEmpty())
			expectExactLedger(g, b)
		}, eventually, tick).Should(Succeed())
		return d, b
	}

	t.Run("settled with a report is charged the report", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		d, b := run(e, "reported", "kit", "steps=2 spend=30 delay=10ms", func(c string) *v1alpha1.Delegation {
			return e.waitPhase(c, v1alpha1.PhaseSucceeded)
		})
		e.g.Expect(ledger(d).Reported).To(Equal(v1alpha1.Meters{tokens: 60}))
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 60}))
		e.g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 40}))
	})

	t.Run("failed at the agent with a report is charged the report", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		d, b := run(e, "failed", "kit", "fail spend=20 delay=10ms", func(c string) *v1alpha1.Delegation {
			return e.waitReason(c, v1alpha1.PhaseFailed, delegation.ReasonRemoteFailed)
		})
		e.g.Expect(ledger(d).Reported).To(Equal(v1alpha1.Meters{tokens: 20}))
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 20}))
	})

	t.Run("a send the agent refused is refunded", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		// The kit grants leases up to kitMaxTTL and refuses longer ones with
		// InvalidParams (-32602), starting nothing.
		d, b := run(e, "refused", "kit", "steps=1", func(c string) *v1alpha1.Delegation {
			return e.waitReason(c, v1alpha1.PhaseFailed, delegation.ReasonSendRefused)
		}, withLease(2*kitMaxTTL))
		e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureInvalidRequest))
		e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("-32602"))
		e.g.Expect(d.Status.TaskID).To(BeEmpty())
		e.g.Expect(ka.Sends(e.ns, "refused")).To(HaveLen(1))
		e.g.Expect(b.Charged[tokens]).To(BeZero())
		e.g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 100}))
	})

	t.Run("an unreachable agent is tried until the deadline and keeps the reservation", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		gone := newKitWorker(t)
		e.createAgent("gone", gone.URL())
		e.waitAgentReady("gone")
		// The Agent controller reads the card once more after its own status
		// write; let it settle Ready before the agent goes.
		e.g.Consistently(func(g Gomega) {
			a := &v1alpha1.Agent{}
			g.Expect(k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "gone"}, a)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(a.Status.Conditions, "Ready")).To(BeTrue())
		}, time.Second, tick).Should(Succeed())
		gone.Close() // the card was read; the send finds nobody
		d, b := run(e, "unreachable", "gone", "steps=1", func(c string) *v1alpha1.Delegation {
			// A send that never left is made again with a back-off, and
			// says until when, until the Delegation's own deadline ends it.
			e.g.Eventually(func(g Gomega) {
				d := e.get(c)
				g.Expect(d.Status.Outcome).NotTo(BeNil())
				g.Expect(d.Status.Outcome.Message).To(ContainSubstring("tried until the deadline"), "status: %s", statusJSON(d))
			}, eventually, tick).Should(Succeed())
			var d *v1alpha1.Delegation
			e.g.Eventually(func(g Gomega) {
				d = e.get(c)
				g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseFailed), "status: %s", statusJSON(d))
				g.Expect(d.Status.Outcome.Reason).To(Equal(delegation.ReasonDeadline))
			}, 40*time.Second, tick).Should(Succeed())
			return d
		}, func(d *v1alpha1.Delegation) { d.Spec.Timeout = &metav1.Duration{Duration: 8 * time.Second} })
		e.g.Expect(d.Status.SendStarted).NotTo(BeNil())
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 100}))
		e.g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 0}))
	})

	t.Run("a cancelled child keeps the reservation", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		d, b := run(e, "cancelled", "kit", "forever spend=5 delay=300ms", func(c string) *v1alpha1.Delegation {
			e.waitRunning(c)
			// It reported some spend, less than it holds.
			e.g.Eventually(func() int64 { return ledger(e.get(c)).Reported[tokens] }, eventually, tick).Should(BeNumerically(">", 0))
			e.update(c, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
			return e.waitReason(c, v1alpha1.PhaseCanceled, delegation.ReasonRequested)
		})
		e.g.Expect(ledger(d).Reported[tokens]).To(BeNumerically("<", 100))
		e.g.Expect(ka.Cancelled(d.Status.TaskID)).To(BeTrue())
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 100}))
	})

	t.Run("a detached child keeps the reservation", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		d, b := run(e, "detached", "kit", holdText, func(c string) *v1alpha1.Delegation {
			e.waitRunning(c)
			e.update(c, func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
			return e.waitPhase(c, v1alpha1.PhaseDetached)
		})
		e.g.Expect(ka.TaskState(d.Status.TaskID)).To(Equal(a2a.TaskStateWorking), "the task keeps running")
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 100}))
	})

	t.Run("a lost task keeps the reservation", func(t *testing.T) {
		t.Parallel()
		e := e.sub(t)
		lost := newKitWorker(t)
		e.createAgent("amnesiac", lost.URL())
		d, b := run(e, "lost", "amnesiac", holdText, func(c string) *v1alpha1.Delegation {
			e.waitRunning(c)
			lost.Restart() // the agent comes back knowing no tasks
			return e.waitReason(c, v1alpha1.PhaseFailed, delegation.ReasonTaskLost)
		})
		e.g.Expect(lost.Calls(func(c kitCall) bool { return c.Method == "GetTask" && c.TaskID == d.Status.TaskID })).NotTo(BeEmpty())
		e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 100}))
	})
}

// A child asking more than its parent has left waits, unsent, until a
// sibling settles and gives back what it did not spend.
func TestBudgetShortChildWaitsUntilASiblingSettles(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 300}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)

	// The first holds 200 while it waits for input.
	e.create(e.kitTask("first", "kit", "ask steps=1 spend=50", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 200})))
	e.waitPhase("first", v1alpha1.PhaseInputRequired)
	e.create(e.kitTask("second", "kit", "steps=1 spend=70", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 200})))
	d := e.waitReason("second", v1alpha1.PhasePending, delegation.ReasonBudgetExhausted)
	e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring("tokens: wants 200, 100 left"))
	e.g.Consistently(func(g Gomega) {
		d := e.get("second")
		g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(d.Status.SendStarted).To(BeNil())
		g.Expect(ka.Sends(e.ns, "second")).To(BeEmpty())
	}, 2*time.Second, tick).Should(Succeed())

	// The reply lets the first finish; it spent 50 of its 200.
	e.update("first", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "go on"}) })
	e.waitPhase("first", v1alpha1.PhaseSucceeded)
	e.waitPhase("second", v1alpha1.PhaseSucceeded)
	e.g.Expect(ka.Sends(e.ns, "second")).To(HaveLen(1))
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 120}))
		g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 180}))
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}

func TestBudgetUnnamedMeterIsGrantedAsZero(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 1000, "calls": 10}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)

	e.create(e.kitTask("tokens-only", "kit", "steps=1 spend=10", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	d := e.waitPhase("tokens-only", v1alpha1.PhaseSucceeded)
	want := map[string]int64{tokens: 100, "calls": 0}
	e.g.Expect(ledger(d).Granted).To(Equal(v1alpha1.Meters(want)))
	sends := ka.Sends(e.ns, "tokens-only")
	e.g.Expect(sends).To(HaveLen(1))
	e.g.Expect(sends[0].Budget).To(Equal(want), "the agent was granted 0 calls")

	// A worker that charges the unnamed meter runs out at once (a group of
	// its own: the first one settled with its only child).
	calls := newKitAgent(t, workerCharging("calls"))
	e.createAgent("caller", calls.URL())
	e.create(e.group("pool2", v1alpha1.Meters{tokens: 1000, "calls": 10}))
	e.waitPhase("pool2", v1alpha1.PhaseRunning)
	e.create(e.kitTask("calls-unnamed", "caller", "steps=1 spend=1", childOf("pool2"), withBudget(v1alpha1.Meters{tokens: 100})))
	d = e.waitReason("calls-unnamed", v1alpha1.PhaseFailed, delegation.ReasonRemoteFailed)
	e.g.Expect(d.Status.Outcome.FailureClass).To(Equal(v1alpha1.FailureBudgetExhausted))
}

// A crash after a child charged its parent and before its own status was
// written: the next operator settles the child without charging again.
func TestBudgetCrashBetweenChargeAndStatusWriteChargesOnce(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.op.Stop()

	var crashing atomic.Pointer[operator]
	var once sync.Once
	crashed := make(chan struct{})
	op := startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		r.afterCharge = func(ctx context.Context) {
			once.Do(func() {
				crashing.Load().stop() // the manager's context ends...
				close(crashed)
			})
			<-ctx.Done() // ...before this pass writes the child's status
		}
	})
	crashing.Store(op)
	e.create(e.kitTask("child", "kit", "steps=1 spend=30", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	e.g.Eventually(crashed, eventually).Should(BeClosed())
	op.Stop()

	// The parent was charged; the child's settled status was never written.
	// When the send's own answer already ended the task (a loaded machine
	// answers late), the pass that charged was the first to learn the task
	// id, so not even that was written: the marker says a send was made,
	// and the next operator looks the task up.
	b := ledger(e.get("pool"))
	e.g.Expect(b.Reservations).To(BeEmpty())
	e.g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 30}))
	child := e.get("child")
	e.g.Expect(delegation.Settled(child.Status.Phase)).To(BeFalse(), "phase %s", child.Status.Phase)
	if child.Status.TaskID == "" {
		e.g.Expect(child.Annotations).To(HaveKey(v1alpha1.AnnotationSendStarted), "the send is recorded before it is made")
	}

	startOperator(t, e.ns, testOptions())
	child = e.waitPhase("child", v1alpha1.PhaseSucceeded)
	e.g.Expect(ledger(child).Reported).To(Equal(v1alpha1.Meters{tokens: 30}))
	e.waitPhase("pool", v1alpha1.PhaseSucceeded)
	e.g.Consistently(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 30}), "charged exactly once")
		expectExactLedger(g, b)
	}, time.Second, tick).Should(Succeed())
	e.g.Expect(ka.Sends(e.ns, "child")).To(HaveLen(1))
}

// workerCharging is the kit worker charging its steps to meter.
func workerCharging(meter string) sample.Worker {
	w := kitWorker()
	w.Meter = meter
	return w
}

// A task that completed at the agent before the operator's cancel arrived
// settles Succeeded; its parent is charged the agent's final report, not an
// older one from the last poll.
func TestBudgetTaskFinishedBeforeItsCancelIsChargedItsFinalReport(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	// No poll comes between the steps and the cancel.
	e.createAgent("kit", ka.URL(), pollEvery(time.Minute))
	e.create(e.group("pool", v1alpha1.Meters{tokens: 100}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.create(e.kitTask("child", "kit", "steps=2 spend=30 delay=1500ms", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	id := e.waitRunning("child").Status.TaskID

	// A change to the object makes the operator read the task once more,
	// while it has done one step.
	poke := 0
	e.g.Eventually(func() int64 {
		poke++
		e.update("child", func(d *v1alpha1.Delegation) {
			d.Annotations = map[string]string{"test/poke": fmt.Sprint(poke)}
		})
		time.Sleep(100 * time.Millisecond)
		return ledger(e.get("child")).Reported[tokens]
	}, eventually, tick).Should(Equal(int64(30)))
	e.g.Eventually(func() a2a.TaskState { return ka.TaskState(id) }, eventually, tick).Should(Equal(a2a.TaskStateCompleted))
	e.g.Expect(ledger(e.get("child")).Reported[tokens]).To(Equal(int64(30)), "the operator has not seen the second step")

	e.update("child", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	d := e.waitReason("child", v1alpha1.PhaseSucceeded, delegation.ReasonCompleted)
	e.g.Expect(ledger(d).Reported).To(Equal(v1alpha1.Meters{tokens: 60}), "the final report")
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(BeEmpty())
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 60}))
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}

// A child waiting for budget has not started: its timeout runs from when it
// is admitted and sent, as a queued Job's activeDeadlineSeconds does.
func TestBudgetWaitDoesNotCountAgainstTheTimeout(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 110}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)

	e.create(e.kitTask("first", "kit", "ask steps=1 spend=10", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	e.waitPhase("first", v1alpha1.PhaseInputRequired)
	const timeout = 2 * time.Second
	e.create(e.kitTask("second", "kit", "steps=1 spend=10", childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100}),
		func(d *v1alpha1.Delegation) { d.Spec.Timeout = &metav1.Duration{Duration: timeout} }))
	d := e.waitReason("second", v1alpha1.PhasePending, delegation.ReasonBudgetExhausted)
	e.g.Expect(d.Status.StartTime).To(BeNil(), "waiting for budget is not a start")
	e.g.Expect(d.Status.Deadline).To(BeNil())
	time.Sleep(timeout + time.Second)

	e.update("first", func(d *v1alpha1.Delegation) { d.Spec.Replies = append(d.Spec.Replies, v1alpha1.Reply{Text: "go on"}) })
	e.waitPhase("first", v1alpha1.PhaseSucceeded)
	d = e.waitPhase("second", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Deadline.Sub(d.Status.StartTime.Time)).To(Equal(timeout))
	e.g.Expect(ka.Sends(e.ns, "second")).To(HaveLen(1))
}

// Deleting a running child ends it like a cancel: the reservation is kept
// as spent and its entry leaves the parent's ledger.
func TestBudgetDeletedChildKeepsItsReservationAsSpent(t *testing.T) {
	e := setup(t)
	ka := newKitWorker(t)
	e.createAgent("kit", ka.URL())
	e.create(e.group("pool", v1alpha1.Meters{tokens: 300}))
	e.waitPhase("pool", v1alpha1.PhaseRunning)
	e.create(e.kitTask("keep", "kit", holdText, childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	e.create(e.kitTask("doomed", "kit", holdText, childOf("pool"), withBudget(v1alpha1.Meters{tokens: 100})))
	e.waitRunning("keep")
	id := e.waitRunning("doomed").Status.TaskID

	e.g.Expect(k8sClient.Delete(context.Background(), e.get("doomed"))).To(Succeed())
	e.g.Eventually(func() bool {
		err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "doomed"}, &v1alpha1.Delegation{})
		return apierrors.IsNotFound(err)
	}, eventually, tick).Should(BeTrue())
	e.g.Expect(ka.Cancelled(id)).To(BeTrue())
	e.g.Eventually(func(g Gomega) {
		b := ledger(e.get("pool"))
		g.Expect(b.Reservations).To(HaveLen(1), "only the live child holds an entry")
		g.Expect(b.Reservations[0].Child).To(Equal("keep"))
		g.Expect(b.Charged).To(Equal(v1alpha1.Meters{tokens: 100}))
		g.Expect(b.Left).To(Equal(v1alpha1.Meters{tokens: 100}))
		expectExactLedger(g, b)
	}, eventually, tick).Should(Succeed())
}
