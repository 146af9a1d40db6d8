/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/api/v1alpha1"
)

type stubLeader struct {
	leading bool
	url     string
	err     error
}

func (s stubLeader) Leading() bool { return s.leading }
func (s stubLeader) LeaderPushURL(context.Context) (string, error) {
	return s.url, s.err
}

type readNows struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

// note records the key; the task counts as not followed.
func (r *readNows) note(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	return false
}

func (r *readNows) all() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]types.NamespacedName(nil), r.keys...)
}

// A shard's push Service reaches any of its replicas; only the leader
// follows the task. A standby checks the token with the shared key and
// hands the notification to the leader, which reads the task at once; a
// forged token goes no further than the standby, and without a leader the
// agent is told to come again.
func TestStandbyHandsNotificationsToTheLeader(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t)
	d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "task"}, Spec: v1alpha1.DelegationSpec{
		AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hi"}}}
	g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	d.Status.TaskID = "task-1"
	g.Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())

	key := []byte(strings.Repeat("k", MinPushKeyBytes)) // one key for every replica
	leader, err := NewPushReceiver("127.0.0.1:0", "http://push.example", key, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	var atLeader, atStandby readNows
	leader.readNow, leader.Leader = atLeader.note, stubLeader{leading: true}
	served := make(chan error, 1)
	go func() { served <- leader.Start(ctx) }()
	url, err := leader.Endpoint(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(url).To(HavePrefix("http://127.0.0.1:"))

	standby, err := NewPushReceiver("127.0.0.1:0", "http://push.example", key, k8sClient)
	g.Expect(err).NotTo(HaveOccurred())
	standby.readNow, standby.Leader = atStandby.note, stubLeader{url: url}
	post := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "/push/"+ns+"/task", strings.NewReader(`{"statusUpdate":{"taskId":"task-1"}}`))
		req.Header.Set("A2A-Notification-Token", token)
		rec := httptest.NewRecorder()
		standby.ServeHTTP(rec, req)
		return rec.Code
	}
	token := standby.Target(d).Token
	g.Expect(post(token)).To(Equal(http.StatusNoContent))
	g.Expect(atLeader.all()).To(Equal([]types.NamespacedName{{Namespace: ns, Name: "task"}}), "the leader reads the task at once")
	g.Expect(leader.events).To(HaveLen(1), "and reconciles it")
	g.Expect(atStandby.all()).To(BeEmpty())
	g.Expect(standby.events).To(BeEmpty())

	g.Expect(post("forged")).To(Equal(http.StatusUnauthorized))
	g.Expect(atLeader.all()).To(HaveLen(1), "a forged token is not handed over")

	standby.Leader = stubLeader{err: errors.New("no process holds the shard's Lease")}
	g.Expect(post(token)).To(Equal(http.StatusServiceUnavailable))

	// A standby that just took over serves the notification itself.
	standby.Leader = stubLeader{leading: true}
	g.Expect(post(token)).To(Equal(http.StatusNoContent))
	g.Expect(atStandby.all()).To(HaveLen(1))
	cancel()
	g.Expect(<-served).To(Succeed())
}
