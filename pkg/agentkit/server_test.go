/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	. "github.com/onsi/gomega"
)

// testAuth authenticates a caller from the x-test-user service parameter,
// as an agent's own authentication layer would; x-test-claimed-user names a
// user without authenticating it.
type testAuth struct {
	a2asrv.PassthroughCallInterceptor
}

func (testAuth) Before(ctx context.Context, cc *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if v, ok := cc.ServiceParams().Get("x-test-user"); ok && len(v) > 0 {
		cc.User = a2asrv.NewAuthenticatedUser(v[0], nil)
	} else if v, ok := cc.ServiceParams().Get("x-test-claimed-user"); ok && len(v) > 0 {
		cc.User = &a2asrv.User{Name: v[0]}
	}
	return ctx, nil, nil
}

func as(param, user string) context.Context {
	return a2aclient.AttachServiceParams(context.Background(), a2aclient.ServiceParams{param: {user}})
}

// An authenticated caller's task is invisible to every other caller: it
// cannot be read, renewed or cancelled by them, and the sweeper still
// cancels it when its lease lapses.
func TestTasksAreKeptApartByAuthenticatedCaller(t *testing.T) {
	g := NewWithT(t)
	exec := newExec(blockUntilDone)
	a := startAgent(t, exec, WithHandlerOptions(a2asrv.WithCallInterceptors(testAuth{})))
	alice := as("x-test-user", "alice")

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))
	msg.Metadata = leaseMeta(2)
	res, err := a.leased.SendMessage(alice, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	g.Expect(err).NotTo(HaveOccurred())
	task := res.(*a2a.Task)
	granted := expiresAt(task)

	a.clock.SetTime(a.clock.Now().Add(time.Second))
	for name, ctx := range map[string]context.Context{
		"another authenticated caller":      as("x-test-user", "bob"),
		"an anonymous caller":               context.Background(),
		"a caller naming alice, not proven": as("x-test-claimed-user", "alice"),
		"an authenticated user:alice":       as("x-test-user", "user:alice"),
	} {
		_, err := a.leased.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		g.Expect(err).To(MatchError(a2a.ErrTaskNotFound), name)
		_, err = a.plain.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		g.Expect(err).To(MatchError(a2a.ErrTaskNotFound), name)
		l, ok, err := a.srv.Kit.leases.Get(context.Background(), task.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		g.Expect(l.ExpiresAt).To(BeTemporally("==", granted), "%s renewed nothing", name)
	}
	g.Expect(exec.stopped).NotTo(BeClosed(), "nobody but alice reached the task")

	got, err := a.leased.GetTask(alice, &a2a.GetTaskRequest{ID: task.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(expiresAt(got)).To(BeTemporally("~", granted.Add(time.Second), time.Millisecond), "alice renews her lease")

	a.clock.SetTime(a.clock.Now().Add(3 * time.Second))
	g.Eventually(exec.stopped).Should(BeClosed(), "the sweeper cancels alice's lapsed task as its owner")
	g.Eventually(func() a2a.TaskState {
		t, err := a.plain.GetTask(alice, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			return ""
		}
		return t.Status.State
	}).Should(Equal(a2a.TaskStateCanceled))
}

// A server without WithOrigins takes its own origins from the card's
// interfaces; one without either knows none and proves no claim.
func TestServerOriginsComeFromTheCard(t *testing.T) {
	g := NewWithT(t)
	card := &a2a.AgentCard{Name: "x", SupportedInterfaces: []*a2a.AgentInterface{
		a2a.NewAgentInterface("https://Agent.example/a2a", a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface("http://agent.internal:8080/rest", a2a.TransportProtocolHTTPJSON),
		a2a.NewAgentInterface("agent.internal:9090", a2a.TransportProtocolGRPC),
	}}
	srv := NewServer(card, newExec(blockUntilDone))
	defer srv.Close()
	g.Expect(srv.Kit.Origins()).To(ConsistOf("https://agent.example:443", "http://agent.internal:8080"))

	explicit := NewServer(card, newExec(blockUntilDone), WithOrigins("http://orchestrator.agents:8080", "not a url"))
	defer explicit.Close()
	g.Expect(explicit.Kit.Origins()).To(ConsistOf("http://orchestrator.agents:8080"), "WithOrigins wins; what is not http(s) is ignored")

	none := NewServer(&a2a.AgentCard{Name: "x"}, newExec(blockUntilDone))
	defer none.Close()
	g.Expect(none.Kit.Origins()).To(BeEmpty())
}
