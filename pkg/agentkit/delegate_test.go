/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// These pin only the shape of what Delegate writes and how it reads a status;
// the operator's tests run it against a real control plane.

// orchUID is the UID of Delegation team/orch, the parent every test's task
// was sent for; fakeClient always holds it, and its Agent "orchestrator",
// whose endpoint is at orchOrigin: this agent.
const (
	orchUID    = "0b7e-orch-uid"
	orchOrigin = "http://orch.test:8080"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	NewWithT(t).Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	orch := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orch", UID: orchUID},
		Spec:   v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "orchestrator"}},
		Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, TaskID: "orch-task"}}
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orchestrator"},
		Status: v1alpha1.AgentStatus{Endpoint: orchOrigin + "/"}}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.Delegation{}).
		WithObjects(append(objs, orch, agent)...).Build()
}

// orchKit is the kit of the agent at orchOrigin.
func orchKit() *Kit { return New(WithOrigins(orchOrigin)) }

// inTask is the context an executor gets for task orch-task, which the
// operator sent for Delegation team/orch to this agent: its first message id
// derives from orch's UID.
func inTask(b *Budget) context.Context {
	ctx := withDelegation(context.Background(), claim{key: types.NamespacedName{Namespace: ns, Name: "orch"},
		firstMessageID: delegation.MessageID(orchUID, -1), taskID: "orch-task", kit: orchKit()})
	return withBudget(ctx, b)
}

func TestDelegateCreatesTheChildAndHoldsItsGrant(t *testing.T) {
	g := NewWithT(t)
	c := fakeClient(t)
	b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})
	ctx := inTask(b)
	req := DelegateRequest{
		Key: "part-1", Agent: workerAgent, Skill: "sum", Text: "add it up",
		Budget: map[string]int64{tokens: 40}, Timeout: time.Minute, Lease: 30 * time.Second,
	}

	key, err := DelegateAsync(ctx, c, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key).To(Equal(client.ObjectKey{Namespace: ns, Name: ChildName("orch", "part-1")}))

	child := &v1alpha1.Delegation{}
	g.Expect(c.Get(ctx, key, child)).To(Succeed())
	g.Expect(child.Annotations).To(HaveKeyWithValue(AnnotationChild, orchUID+"/part-1"))
	g.Expect(child.Spec).To(Equal(v1alpha1.DelegationSpec{
		AgentRef:  &v1alpha1.AgentRef{Name: workerAgent},
		Skill:     "sum",
		ParentRef: &v1alpha1.LocalRef{Name: "orch"},
		Message:   &v1alpha1.Message{Text: "add it up"},
		Budget:    &v1alpha1.BudgetSpec{Meters: map[string]int64{tokens: 40}},
		Timeout:   &metav1.Duration{Duration: time.Minute},
		Lease:     &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 30 * time.Second}},
	}))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 60}))

	again, err := DelegateAsync(ctx, c, req)
	g.Expect(err).NotTo(HaveOccurred(), "a retry finds the child")
	g.Expect(again).To(Equal(key))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 60}), "and holds nothing more")

	tooMuch := DelegateRequest{Key: "part-2", Agent: workerAgent, Text: "x", Budget: map[string]int64{tokens: 61}}
	_, err = DelegateAsync(ctx, c, tooMuch)
	g.Expect(err).To(MatchError(ErrBudgetExhausted), "an agent cannot grant more than it has left")
	list := &v1alpha1.DelegationList{}
	g.Expect(c.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "orch and its one child")
}

func TestDelegateRefusesOutsideADelegationAndForeignChildren(t *testing.T) {
	g := NewWithT(t)
	foreign := &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: childA},
		Spec:       v1alpha1.DelegationSpec{ParentRef: &v1alpha1.LocalRef{Name: "someone-else"}},
	}
	c := fakeClient(t, foreign)

	_, err := DelegateAsync(context.Background(), c, DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"})
	g.Expect(err).To(MatchError(ContainSubstring("did not come from a Delegation")))

	_, err = DelegateAsync(inTask(nil), c, DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"})
	g.Expect(err).To(MatchError(ErrChildNameTaken))
}

func TestDelegateWaitsForTheChildToSettle(t *testing.T) {
	g := NewWithT(t)
	c := fakeClient(t)
	b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})
	ctx := inTask(b)

	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x", Budget: map[string]int64{tokens: 40}}
		o, err := Delegate(ctx, c, req)
		done <- result{o, err}
	}()

	child := &v1alpha1.Delegation{}
	key := client.ObjectKey{Namespace: ns, Name: childA}
	g.Eventually(func() error { return c.Get(ctx, key, child) }).Should(Succeed())
	child.Status.Phase = v1alpha1.PhaseRunning
	g.Expect(c.Status().Update(ctx, child)).To(Succeed())
	g.Consistently(done).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "Running is not settled")

	child.Status.Phase = v1alpha1.PhaseSucceeded
	child.Status.Outcome = &v1alpha1.Outcome{Reason: "Completed"}
	child.Status.Result = &v1alpha1.Result{Text: "42"}
	// As the operator writes it: the agent reported 15 of a 40 grant.
	child.Status.Budget = &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{tokens: 40}, Reported: v1alpha1.Meters{tokens: 15},
		Spent: v1alpha1.Meters{tokens: 15}}
	g.Expect(c.Status().Update(ctx, child)).To(Succeed())

	var r result
	g.Eventually(done).WithTimeout(5 * time.Second).Should(Receive(&r))
	g.Expect(r.err).NotTo(HaveOccurred())
	g.Expect(r.o).To(Equal(&Outcome{
		Name: childA, Phase: v1alpha1.PhaseSucceeded, Reason: "Completed", Text: "42",
		Spent: map[string]int64{tokens: 15},
	}))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 85}), "the child's report replaces its hold")

	again, err := Wait(ctx, c, key)
	g.Expect(err).NotTo(HaveOccurred(), "waiting again by name works")
	g.Expect(again.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 85}), "and settles once")
}

// A task that names a Delegation which did not send it creates nothing: not
// in another namespace, not under another parent of its own namespace.
func TestDelegateRefusesAClaimItCannotProve(t *testing.T) {
	g := NewWithT(t)
	other := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "root", UID: "victim-uid"},
		Spec:   v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "orchestrator"}},
		Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning}}
	victimAgent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "orchestrator"},
		Status: v1alpha1.AgentStatus{Endpoint: "https://elsewhere.example/"}}
	c := fakeClient(t, other, victimAgent)
	req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"}
	victim := types.NamespacedName{Namespace: "victim", Name: "root"}
	for name, cl := range map[string]claim{
		"another namespace, our own message id":  {key: victim, firstMessageID: delegation.MessageID(orchUID, -1), taskID: "orch-task"},
		"a forged message id of the wrong shape": {key: victim, firstMessageID: "victim-uid"},
		"a reply id of the claimed Delegation":   {key: victim, firstMessageID: delegation.MessageID("victim-uid", 0)},
		"the right id, forwarded from elsewhere": {key: victim, firstMessageID: delegation.MessageID("victim-uid", -1)},
		"no ids at all":                          {key: types.NamespacedName{Namespace: ns, Name: "orch"}},
		"a Delegation that does not exist":       {key: types.NamespacedName{Namespace: "victim", Name: "missing"}},
	} {
		cl.kit = orchKit()
		_, err := DelegateAsync(withDelegation(context.Background(), cl), c, req)
		g.Expect(err).To(MatchError(ErrClaimNotProven), name)
	}
	list := &v1alpha1.DelegationList{}
	g.Expect(c.List(context.Background(), list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "only orch and the victim's root: nothing was created")

	// The task id recorded in the named Delegation's status proves it too
	// (a task adopted by taskID was not started by the operator's message).
	byTask := claim{key: types.NamespacedName{Namespace: ns, Name: "orch"}, firstMessageID: "someone-elses", taskID: "orch-task", kit: orchKit()}
	_, err := DelegateAsync(withDelegation(context.Background(), byTask), c, req)
	g.Expect(err).NotTo(HaveOccurred())
}

// TestClaimCheck pins each step of the claim check (package documentation)
// on what the agent read.
func TestClaimCheck(t *testing.T) {
	const uid, task = "x-uid", "task-1"
	first := delegation.MessageID(uid, -1)
	running := func(mut ...func(*v1alpha1.Delegation)) *v1alpha1.Delegation {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", UID: uid},
			Spec:   v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "a"}},
			Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, TaskID: task}}
		for _, m := range mut {
			m(d)
		}
		return d
	}
	at := func(endpoint string) *v1alpha1.Agent {
		return &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}, Status: v1alpha1.AgentStatus{Endpoint: endpoint}}
	}
	here := at("HTTP://Orch.Test:8080/rest")
	mine := []string{orchOrigin, "https://orch.example:443"}
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		cl       claim
		d        *v1alpha1.Delegation
		agent    *v1alpha1.Agent
		origins  []string
		refusal  string // "" when proven
		sentHere bool
	}{
		{"recorded task, sent here", claim{taskID: task, firstMessageID: "anything"}, running(), here, mine, "", true},
		{"not yet recorded, first message derived from the UID", claim{taskID: "t-2", firstMessageID: first},
			running(func(d *v1alpha1.Delegation) { d.Status.TaskID = ""; d.Status.Phase = v1alpha1.PhasePending }), here, mine, "", true},
		{"a later attempt, not yet recorded, its own first message", claim{taskID: "t-3", firstMessageID: first + "-2"},
			running(func(d *v1alpha1.Delegation) { d.Status.TaskID, d.Status.Attempt = "", 2 }), here, mine, "", true},
		{"a later attempt, not yet recorded, the first attempt's message", claim{taskID: "t-3", firstMessageID: first},
			running(func(d *v1alpha1.Delegation) { d.Status.TaskID, d.Status.Attempt = "", 2 }), here, mine, "did not send message", true},
		{"https default port written out", claim{taskID: task}, running(), at("https://ORCH.example/"), mine, "", true},
		{"sent to another agent", claim{taskID: task}, running(), at("http://evil.test:8080/"), mine, "was sent to another agent", false},
		{"another port of the same host", claim{taskID: task}, running(), at("http://orch.test:9090/"), mine, "was sent to another agent", false},
		{"http instead of https", claim{taskID: task}, running(), at("http://orch.example/"), mine, "was sent to another agent", false},
		{"a gRPC endpoint", claim{taskID: task}, running(), at("orch.test:8080"), mine, "unsupported scheme", false},
		{"no Agent", claim{taskID: task}, running(), nil, mine, "has no Agent", false},
		{"an Agent without endpoint", claim{taskID: task}, running(), at(""), mine, "no endpoint", false},
		{"an agent that knows no origin of its own", claim{taskID: task}, running(), here, nil, "knows none of its own origins", false},
		{"another task than the recorded one", claim{taskID: "forged", firstMessageID: first}, running(), here, mine, `was sent as task "task-1"`, true},
		{"not yet recorded, another first message", claim{taskID: "t-2", firstMessageID: "forged"},
			running(func(d *v1alpha1.Delegation) { d.Status.TaskID = "" }), here, mine, `did not send message "forged"`, true},
		{"not yet recorded, no first message", claim{taskID: "t-2"},
			running(func(d *v1alpha1.Delegation) { d.Status.TaskID = "" }), here, mine, "did not send message", true},
		{"settled", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.Status.Phase = v1alpha1.PhaseSucceeded }), here, mine, "no longer runs (Succeeded)", true},
		{"detached", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.Status.Phase = v1alpha1.PhaseDetached }), here, mine, "no longer runs", true},
		{"cancel requested", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.Spec.Cancel = true }), here, mine, "was cancelled", true},
		{"detach requested", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.Spec.Detach = true }), here, mine, "was detached", true},
		{"being deleted", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.DeletionTimestamp = &now }), here, mine, "is being deleted", true},
		{"settled and sent elsewhere: nothing to report on", claim{taskID: task},
			running(func(d *v1alpha1.Delegation) { d.Status.Phase = v1alpha1.PhaseFailed }), at("http://evil.test/"), mine, "no longer runs", false},
		{"waiting for input still runs", claim{taskID: task}, running(func(d *v1alpha1.Delegation) { d.Status.Phase = v1alpha1.PhaseInputRequired }), here, mine, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			k := New(WithOrigins(tc.origins...))
			reason, sentHere := claimRefusal(tc.cl, tc.d, tc.agent, k.origins)
			if tc.refusal == "" {
				g.Expect(reason).To(BeEmpty())
			} else {
				g.Expect(reason).To(ContainSubstring(tc.refusal))
			}
			g.Expect(sentHere).To(Equal(tc.sentHere))
		})
	}
}

// The claim is read from the message being executed only: a reply without
// it does not inherit the claim of the task's first message.
func TestClaimComesFromTheMessageItself(t *testing.T) {
	g := NewWithT(t)
	claimed := func(text string, meta map[string]any) *a2a.Message {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		m.Metadata = meta
		return m
	}
	firstMsg := claimed("start", map[string]any{tethera2a.DelegationMetadataKey: "team/orch"})
	firstMsg.ID = delegation.MessageID(orchUID, -1)
	stored := &a2a.Task{ID: "orch-task", History: []*a2a.Message{firstMsg}}

	_, ok := delegationOf(&a2asrv.ExecutorContext{TaskID: "orch-task", Message: claimed("a reply", nil), StoredTask: stored})
	g.Expect(ok).To(BeFalse(), "a reply without the claim has none")

	cl, ok := delegationOf(&a2asrv.ExecutorContext{TaskID: "orch-task", StoredTask: stored,
		Message: claimed("a reply", map[string]any{tethera2a.DelegationMetadataKey: "team/orch"})})
	g.Expect(ok).To(BeTrue())
	g.Expect(cl.key).To(Equal(types.NamespacedName{Namespace: ns, Name: "orch"}))
	g.Expect(cl.firstMessageID).To(Equal(firstMsg.ID), "the first message id still comes from the history")

	cl, ok = delegationOf(&a2asrv.ExecutorContext{TaskID: "new", Message: firstMsg})
	g.Expect(ok).To(BeTrue())
	g.Expect(cl.firstMessageID).To(Equal(firstMsg.ID), "a new task's first message is the message itself")
}

func TestChildNamesAreValidAndDistinct(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ChildName("orch", "Part 1/3")).To(MatchRegexp(`^orch-part-1-3-[0-9a-f]{10}$`))
	g.Expect(ChildName("orch", "a_b")).NotTo(Equal(ChildName("orch", "a-b")), "keys that read alike")
	g.Expect(ChildName("a", "b-c")).NotTo(Equal(ChildName("a-b", "c")), "different splits of parent and key")
	g.Expect(ChildName("orch", "___")).To(MatchRegexp(`^orch-[0-9a-f]{10}$`), "a key with nothing name-safe")

	long := strings.Repeat("p", 60)
	a, b := ChildName(long, "worker-1"), ChildName(long, "worker-2")
	g.Expect(len(a)).To(BeNumerically("<=", 63))
	g.Expect(a).NotTo(Equal(b))
	g.Expect(ChildName(long, "worker-1")).To(Equal(a), "deterministic")
	for _, n := range []string{a, ChildName("orch", "Part 1/3"), ChildName("orch", "-"+strings.Repeat("k", 80))} {
		g.Expect(validation.IsDNS1123Label(n)).To(BeEmpty(), n)
	}
	g.Expect(validation.IsDNS1123Subdomain(ChildName("x.y", "."+strings.Repeat("k", 80)))).To(BeEmpty(), "a parent with dots")
}

// A child's name taken by an object agentkit did not create for this parent
// and key, or with another spec, is not accepted, and nothing is held for it.
func TestDelegateDoesNotAcceptASquattedName(t *testing.T) {
	req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x", Budget: map[string]int64{tokens: 10}}
	mark := map[string]string{AnnotationChild: orchUID + "/a"}
	spec := v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: workerAgent}, ParentRef: &v1alpha1.LocalRef{Name: "orch"},
		Message: &v1alpha1.Message{Text: "x"}, Budget: &v1alpha1.BudgetSpec{Meters: map[string]int64{tokens: 10}}}
	for name, tc := range map[string]struct {
		annotations map[string]string
		mutate      func(*v1alpha1.DelegationSpec)
		accepted    bool
	}{
		"created by agentkit for this parent and key": {annotations: mark, accepted: true},
		"the default parentClosePolicy written out": {annotations: mark, accepted: true,
			mutate: func(s *v1alpha1.DelegationSpec) { s.ParentClosePolicy = v1alpha1.ParentClosePolicyCancel }},
		"no mark":                    {},
		"the mark of another parent": {annotations: map[string]string{AnnotationChild: "other-uid/a"}},
		"another Agent":              {annotations: mark, mutate: func(s *v1alpha1.DelegationSpec) { s.AgentRef.Name = "evil" }},
		"another message":            {annotations: mark, mutate: func(s *v1alpha1.DelegationSpec) { s.Message.Text = "rm -rf" }},
		"a task to adopt":            {annotations: mark, mutate: func(s *v1alpha1.DelegationSpec) { s.TaskID = "someone-elses" }},
		"a larger budget":            {annotations: mark, mutate: func(s *v1alpha1.DelegationSpec) { s.Budget.Meters[tokens] = 1000 }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := spec.DeepCopy()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			squat := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ChildName("orch", "a"), Annotations: tc.annotations}, Spec: *s}
			c := fakeClient(t, squat)
			b := newBudget(true, map[string]int64{tokens: 100}, nil, time.Time{})
			_, err := DelegateAsync(inTask(b), c, req)
			if tc.accepted {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 90}))
				return
			}
			g.Expect(err).To(MatchError(ErrChildNameTaken))
			g.Expect(b.Left()).To(Equal(map[string]int64{tokens: 100}), "nothing is held for a child that is not ours")
		})
	}
}

// A refusal is recorded on the claimed Delegation only when it was sent to
// this agent: a forwarder cannot make the agent write Events into the
// namespace whose claim it forwards.
func TestClaimRefusalsAreRecordedOnlyOnThisAgentsDelegations(t *testing.T) {
	g := NewWithT(t)
	settled := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settled", UID: "settled-uid"},
		Spec:   v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "orchestrator"}},
		Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseSucceeded, TaskID: "settled-task"}}
	elsewhere := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "root", UID: "victim-uid"},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "researcher"}}}
	researcher := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "researcher"},
		Status: v1alpha1.AgentStatus{Endpoint: "https://researcher.example/"}}
	c := fakeClient(t, settled, elsewhere, researcher)
	rec := events.NewFakeRecorder(10)
	k := New(WithOrigins(orchOrigin), WithEventRecorder(rec))
	req := DelegateRequest{Key: "a", Agent: workerAgent, Text: "x"}

	forwarded := claim{key: types.NamespacedName{Namespace: "victim", Name: "root"},
		firstMessageID: delegation.MessageID("victim-uid", -1), taskID: "t-1", kit: k}
	_, err := DelegateAsync(withDelegation(context.Background(), forwarded), c, req)
	g.Expect(err).To(MatchError(ContainSubstring("was sent to another agent")))
	g.Expect(rec.Events).To(BeEmpty(), "nothing is written into the namespace of a claim sent elsewhere")

	late := claim{key: types.NamespacedName{Namespace: ns, Name: "settled"}, taskID: "settled-task", kit: k}
	_, err = DelegateAsync(withDelegation(context.Background(), late), c, req)
	g.Expect(err).To(MatchError(ErrClaimNotProven))
	g.Expect(rec.Events).To(Receive(And(ContainSubstring("Warning "+EventClaimNotProven), ContainSubstring("no longer runs (Succeeded)"))))
}
