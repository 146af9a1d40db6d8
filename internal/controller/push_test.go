/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	d, p := pushReceiverFor(t, g, "task-1")
	ns := d.Namespace
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

// A verified notification of a followed task has it read at once, and the
// read's answer wakes the Delegation: no pass is queued beside the read. A
// task not followed yet also wakes the Delegation now. An artifact alone
// costs neither a read nor a pass.
func TestPushReceiverReadsWhatChanged(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	d, p := pushReceiverFor(t, g, "task-1")
	ns := d.Namespace
	reads, followed := 0, true
	p.readNow = func(types.NamespacedName) bool { reads++; return followed }
	token := p.Target(d).Token
	post := func(body string) {
		req := httptest.NewRequest(http.MethodPost, "/push/"+ns+"/task", strings.NewReader(body))
		req.Header.Set("A2A-Notification-Token", token)
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		g.Expect(rec.Code).To(Equal(http.StatusNoContent))
	}
	post(`{"statusUpdate":{"taskId":"task-1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	g.Expect(reads).To(Equal(1))
	g.Expect(p.events).To(BeEmpty(), "the read's answer wakes the Delegation")

	post(`{"artifactUpdate":{"taskId":"task-1","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`)
	g.Expect(reads).To(Equal(1), "an artifact alone is not read")
	g.Expect(p.events).To(BeEmpty())

	followed = false
	post(`{"statusUpdate":{"taskId":"task-1","status":{"state":"TASK_STATE_WORKING"}}}`)
	g.Expect(reads).To(Equal(2))
	g.Expect(p.events).To(HaveLen(1), "a task not followed yet wakes the Delegation now")
}

// A push token is good for one send of one Delegation, until its deadline
// and while it has not settled (real API server: the receiver reads the
// Delegation as the operator's cache would).
func TestPushTokenIsBoundToTheSendAndExpires(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	p, err := NewPushReceiver("127.0.0.1:0", "http://push.example", nil, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())

	sent := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	future, past := metav1.NewTime(time.Now().Add(time.Hour)), metav1.NewTime(time.Now().Add(-time.Second))
	create := func(name string, status v1alpha1.DelegationStatus) *v1alpha1.Delegation {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DelegationSpec{
			AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"}}}
		g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed())
		d.Status = status
		g.Expect(k8sClient.Status().Update(context.Background(), d)).To(Succeed())
		return d
	}
	post := func(d *v1alpha1.Delegation, token string) int {
		req := httptest.NewRequest(http.MethodPost, "/push/"+ns+"/"+d.Name, strings.NewReader(`{}`))
		req.Header.Set("A2A-Notification-Token", token)
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		return rec.Code
	}

	running := create("running", v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, SendStarted: &sent, Deadline: &future})
	token := p.Target(running).Token
	g.Expect(post(running, token)).To(Equal(http.StatusNoContent))

	// Another send of the same Delegation (another marker) has another token.
	earlier := running.DeepCopy()
	earlier.Status.SendStarted = &metav1.Time{Time: sent.Add(-time.Hour)}
	g.Expect(post(running, p.Target(earlier).Token)).To(Equal(http.StatusUnauthorized))
	// The expiry cannot be moved: it is signed.
	_, mac, _ := strings.Cut(token, ".")
	g.Expect(post(running, "0."+mac)).To(Equal(http.StatusUnauthorized))
	// The token of the earlier format, HMAC(UID), is no longer accepted.
	old := hmac.New(sha256.New, p.Key)
	old.Write([]byte(running.UID))
	g.Expect(post(running, base64.RawURLEncoding.EncodeToString(old.Sum(nil)))).To(Equal(http.StatusUnauthorized))

	// Past the deadline the token has expired.
	expired := create("expired", v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, SendStarted: &sent, Deadline: &past})
	g.Expect(post(expired, p.Target(expired).Token)).To(Equal(http.StatusUnauthorized))

	// Once the Delegation settled, nothing is left to follow.
	settled := create("settled", v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, SendStarted: &sent})
	token = p.Target(settled).Token
	g.Expect(post(settled, token)).To(Equal(http.StatusNoContent), "no deadline: good while it runs")
	settled.Status.Phase = v1alpha1.PhaseSucceeded
	g.Expect(k8sClient.Status().Update(context.Background(), settled)).To(Succeed())
	g.Expect(post(settled, token)).To(Equal(http.StatusUnauthorized))
	g.Expect(p.events).To(HaveLen(2), "only the two accepted notifications requeue")
}

// One source holding connections with slow headers gets at most
// maxPushConnsPerSource of them; the next is closed at once, and another
// source is still served.
func TestPushReceiverLimitsConnectionsPerSource(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	p, err := NewPushReceiver("127.0.0.1:0", "http://push.example", nil, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		g.Expect(<-served).To(Succeed())
	})
	dial := func(source string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	slow := make([]net.Conn, 0, maxPushConnsPerSource)
	for range maxPushConnsPerSource {
		c := dial("127.0.0.1")
		_, err := io.WriteString(c, "POST /push/ns/x HTTP/1.1\r\nHost: push\r\n") // headers never finish
		g.Expect(err).NotTo(HaveOccurred())
		slow = append(slow, c)
	}
	// Connections are accepted in order: the next one from this source
	// finds the source full and is closed before the header timeout.
	extra := dial("127.0.0.1")
	_ = extra.SetReadDeadline(time.Now().Add(4 * time.Second))
	_, err = extra.Read(make([]byte, 1))
	g.Expect(err).To(MatchError(io.EOF), "the %d+1st connection of one source is closed unanswered", maxPushConnsPerSource)

	other := dial("127.0.0.2")
	_ = other.SetDeadline(time.Now().Add(4 * time.Second))
	_, err = io.WriteString(other, "POST /push/ns/x HTTP/1.1\r\nHost: push\r\nContent-Length: 0\r\n\r\n")
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(other), nil)
	g.Expect(err).NotTo(HaveOccurred(), "another source is served")
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(slow).To(HaveLen(maxPushConnsPerSource))
}

// pushReceiverFor creates a Delegation "task" in a new namespace, following
// taskID when it is not empty, and a push receiver that reads it.
func pushReceiverFor(t *testing.T, g *WithT, taskID string) (*v1alpha1.Delegation, *PushReceiver) {
	ns := newNamespace(t)
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "task"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"}}}
	g.Expect(k8sClient.Create(context.Background(), d)).To(Succeed())
	if taskID != "" {
		d.Status.TaskID = taskID
		g.Expect(k8sClient.Status().Update(context.Background(), d)).To(Succeed())
	}
	p, err := NewPushReceiver("127.0.0.1:0", "http://push.example", nil, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	return d, p
}
