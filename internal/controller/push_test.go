/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func freeLoopbackAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// With a poll interval of an hour, only the agent's push notification can
// tell the operator that the task finished.
func TestPushNotificationsFollowTheTaskWithoutPolling(t *testing.T) {
	t.Parallel()
	e := &env{t: t, g: NewWithT(t), ns: newNamespace(t), agent: newTestAgentWith(true)}
	t.Cleanup(e.agent.Close)
	addr := freeLoopbackAddr(t)
	e.op = startOperatorWith(t, e.ns, testOptions(), func(r *DelegationReconciler) {
		var err error
		r.Push, err = NewPushReceiver(addr, "http://"+addr, nil, r.Client)
		e.g.Expect(err).NotTo(HaveOccurred())
	})
	e.createAgent("agent", e.agent.URL(), func(a *v1alpha1.Agent) { a.Spec.PollInterval = &metav1.Duration{Duration: time.Hour} })
	e.g.Eventually(func() bool {
		a := &v1alpha1.Agent{}
		_ = k8sClient.Get(context.Background(), clientKey(&v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "agent"}}), a)
		return a.Status.PushNotifications
	}, eventually, tick).Should(BeTrue())

	e.create(e.task("pushed", "slow"))
	d := e.waitPhase("pushed", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result.Text).To(Equal("slow done"))
	e.g.Expect(len(e.agent.Calls("GetTask"))).To(BeNumerically("<=", 6), "followed on notifications, not by polling")
}

func TestPushReceiverChecksTokenAndTask(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "task"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.LocalRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"}}}
	g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed())
	d.Status.TaskID = "task-1"
	g.Expect(k8sClient.Status().Update(context.Background(), d)).To(Succeed())

	p, err := NewPushReceiver("127.0.0.1:0", "http://push.example", nil, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	target := p.Target(d)
	g.Expect(target.URL).To(Equal("http://push.example/push/" + ns + "/task"))

	post := func(path, header, value, body string) int {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		if header != "" {
			req.Header.Set(header, value)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		return rec.Code
	}
	path := "/push/" + ns + "/task"
	g.Expect(post(path, "A2A-Notification-Token", target.Token, `{"statusUpdate":{"taskId":"task-1"}}`)).To(Equal(http.StatusNoContent))
	g.Expect(post(path, "X-A2A-Notification-Token", target.Token, `{"id":"task-1","kind":"task"}`)).To(Equal(http.StatusNoContent))
	g.Expect(post(path, "Authorization", "Bearer "+target.Token, `{"task":{"id":"task-1"}}`)).To(Equal(http.StatusNoContent))
	g.Expect(post(path, "A2A-Notification-Token", "forged", `{"task":{"id":"task-1"}}`)).To(Equal(http.StatusUnauthorized))
	g.Expect(post(path, "", "", `{"task":{"id":"task-1"}}`)).To(Equal(http.StatusUnauthorized))
	g.Expect(post(path, "A2A-Notification-Token", target.Token, `{"task":{"id":"someone-else"}}`)).To(Equal(http.StatusBadRequest))
	g.Expect(post("/push/"+ns+"/missing", "A2A-Notification-Token", target.Token, `{}`)).To(Equal(http.StatusUnauthorized),
		"an unknown name answers like a bad token")
	g.Expect(p.events).To(HaveLen(3), "each accepted notification requeues the Delegation")
}
