/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

var clock = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestNodeOfKeepsWhatTheViewShows(t *testing.T) {
	g := NewWithT(t)
	until := metav1.NewTime(clock.Add(20 * time.Second))
	d := &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "team-a", CreationTimestamp: metav1.NewTime(clock),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "delegation.tether.dev/v1alpha1", Kind: "Delegation",
				Name: "root", Controller: ptr.To(true)}}},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "researcher"}, Skill: "search",
			Message: &v1alpha1.Message{Text: "the prompt, which the page never needs"},
			Replies: []v1alpha1.Reply{{Text: "a"}, {Text: "b"}}},
		Status: v1alpha1.DelegationStatus{Phase: v1alpha1.PhaseRunning, TaskID: "t-1", RepliesSent: 1, Attempt: 2, MaxAttempts: 3,
			Outcome: &v1alpha1.Outcome{Reason: "Working", Message: "reading"},
			Lease:   &v1alpha1.LeaseStatus{TTL: &metav1.Duration{Duration: 30 * time.Second}, Granted: true, GrantedUntil: &until},
			Budget: &v1alpha1.BudgetStatus{Granted: v1alpha1.Meters{"tokens": 100, "calls": 5},
				Reserved: v1alpha1.Meters{"tokens": 20}, Spent: v1alpha1.Meters{"tokens": 30, "calls": 1},
				Left: v1alpha1.Meters{"tokens": 50, "calls": 4}}},
	}
	n := nodeOf(d)
	g.Expect(n.Key).To(Equal("team-a/child"))
	g.Expect(n.Parent).To(Equal("team-a/root"), "the ownerReference names the parent")
	g.Expect(n.Agent).To(Equal("researcher"))
	g.Expect(n.Message).To(Equal("reading"))
	g.Expect(n.Replies).To(Equal([2]int{1, 2}))
	g.Expect(n.Attempt).To(Equal("attempt 2/3"), "the attempt under a retry policy, as tree and describe show it")
	g.Expect(n.Lease).To(Equal(&lease{TTLSeconds: 30, Granted: true, GrantedUntil: ptr.To("2026-11-29T12:00:20Z")}))
	g.Expect(n.Budget).To(Equal([]meter{
		{Name: "calls", Granted: 5, Spent: 1, Left: 4},
		{Name: "tokens", Granted: 100, Reserved: 20, Spent: 30, Left: 50},
	}))
	data, err := json.Marshal(n)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).NotTo(ContainSubstring("the prompt"), "the spec's message stays in the cluster")
	d.Status.Attempt, d.Status.MaxAttempts = 0, 0
	g.Expect(nodeOf(d).Attempt).To(BeEmpty(), "no retry policy: no attempt to count")
}

func TestEventOfOnlyDelegations(t *testing.T) {
	g := NewWithT(t)
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{UID: "e1"}, Reason: "Sent", Note: "sent", Type: "Normal",
		EventTime: metav1.NewMicroTime(clock), Series: &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(clock.Add(time.Minute))},
		Regarding: corev1.ObjectReference{APIVersion: "delegation.tether.dev/v1alpha1", Kind: "Delegation", Namespace: "a", Name: "x"}}
	e, ok := eventOf(ev)
	g.Expect(ok).To(BeTrue())
	g.Expect(e).To(Equal(event{UID: "e1", Key: "a/x", Type: "Normal", Reason: "Sent", Note: "sent", Count: 3, LastSeen: clock.Add(time.Minute)}))
	ev.Regarding.Kind = "Pod"
	_, ok = eventOf(ev)
	g.Expect(ok).To(BeFalse())
}

func TestHubKeepsTheNewestEventsOfANode(t *testing.T) {
	g := NewWithT(t)
	h := newHub("a", func() time.Time { return clock })
	for i := range eventsPerNode + 5 {
		h.upsertEvent(event{UID: string(rune('A' + i)), Key: "a/x", LastSeen: clock.Add(time.Duration(i) * time.Second)})
	}
	h.upsertEvent(event{UID: "A", Key: "a/x", LastSeen: clock.Add(time.Hour)}) // an old one seen again
	evs := h.events["a/x"]
	g.Expect(evs).To(HaveLen(eventsPerNode))
	g.Expect(evs[len(evs)-1].UID).To(Equal("A"), "newest last")
	h.deleteNode("a/x")
	g.Expect(h.events).NotTo(HaveKey("a/x"), "a deleted Delegation's Events go with it")
}

func TestHubCutsOffAPageThatFallsBehind(t *testing.T) {
	g := NewWithT(t)
	h := newHub("", time.Now)
	snap, changes, cancel := h.subscribe()
	defer cancel()
	g.Expect(snap.Nodes).To(BeEmpty())
	for i := range subscriberSlot + 1 {
		h.upsertNode(node{Key: "a/" + string(rune('a'+i%26))})
	}
	n := 0
	for range changes {
		n++
	}
	g.Expect(n).To(Equal(subscriberSlot), "the channel held what fit, then closed")
	_, _, cancel2 := h.subscribe()
	cancel2()
	cancel2() // twice is harmless
}

// get asks the handler for path, with host as the Host header.
func get(h http.Handler, method, host, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://"+host+path, nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerServesOnlyTheTokenPathToLoopbackNames(t *testing.T) {
	s, err := New(nil, "a")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	h := s.handler(8080)
	tests := []struct {
		method, host, path string
		want               int
	}{
		{http.MethodGet, "127.0.0.1:8080", s.Path(), http.StatusOK},
		{http.MethodGet, "localhost:8080", s.Path() + "app.js", http.StatusOK},
		{http.MethodGet, "[::1]:8080", s.Path() + "style.css", http.StatusOK},
		{http.MethodGet, "127.0.0.1:8080", strings.TrimSuffix(s.Path(), "/"), http.StatusMovedPermanently},
		{http.MethodGet, "127.0.0.1:8080", "/", http.StatusNotFound},
		{http.MethodGet, "127.0.0.1:8080", "/app.js", http.StatusNotFound},
		{http.MethodGet, "127.0.0.1:9090", s.Path(), http.StatusForbidden},
		{http.MethodGet, "rebound.example:8080", s.Path(), http.StatusForbidden},
		{http.MethodPost, "127.0.0.1:8080", s.Path(), http.StatusMethodNotAllowed},
		{http.MethodPut, "127.0.0.1:8080", s.Path() + "stream", http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		g := NewWithT(t)
		w := get(h, tc.method, tc.host, tc.path)
		g.Expect(w.Code).To(Equal(tc.want), "%s %s %s", tc.method, tc.host, tc.path)
	}
	g := NewWithT(t)
	w := get(h, http.MethodGet, "127.0.0.1:8080", s.Path())
	g.Expect(w.Header().Get("Content-Security-Policy")).To(ContainSubstring("script-src 'self'"))
	g.Expect(w.Header().Get("Content-Security-Policy")).To(ContainSubstring("connect-src 'self'"))
	g.Expect(w.Header().Get("X-Content-Type-Options")).To(Equal("nosniff"))
	g.Expect(w.Body.String()).To(ContainSubstring(`<script type="module" src="app.js">`))
	g.Expect(w.Body.String()).NotTo(MatchRegexp(`(src|href)="(https?:)?//`), "nothing loads from elsewhere")
}

func TestStreamSendsASnapshotThenChanges(t *testing.T) {
	g := NewWithT(t)
	s, err := New(nil, "a")
	g.Expect(err).NotTo(HaveOccurred())
	s.hub.upsertNode(node{Key: "a/root", Namespace: "a", Name: "root", Phase: "Running"})
	srv := httptest.NewServer(s.handler(0))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+s.Path()+"stream", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Host = "127.0.0.1:0"
	resp, err := srv.Client().Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		g.Expect(lines.Scan()).To(BeTrue())
		return lines.Text()
	}
	g.Expect(next()).To(Equal("event: snapshot"))
	var snap snapshot
	g.Expect(json.Unmarshal([]byte(strings.TrimPrefix(next(), "data: ")), &snap)).To(Succeed())
	g.Expect(snap.Namespace).To(Equal("a"))
	g.Expect(snap.Nodes).To(ConsistOf(HaveField("Phase", "Running")))
	g.Expect(next()).To(BeEmpty())

	s.hub.upsertNode(node{Key: "a/root", Namespace: "a", Name: "root", Phase: "Succeeded"})
	g.Expect(next()).To(Equal("event: node"))
	g.Expect(next()).To(ContainSubstring(`"phase":"Succeeded"`))
	g.Expect(next()).To(BeEmpty())
	s.hub.problem(sourceEvents, "cannot watch events: forbidden")
	g.Expect(next()).To(Equal("event: problem"))
	g.Expect(next()).To(ContainSubstring(`forbidden`))
}

func TestServeRefusesANonLoopbackListener(t *testing.T) {
	g := NewWithT(t)
	s, err := New(nil, "a")
	g.Expect(err).NotTo(HaveOccurred())
	ln := fakeListener{addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80}}
	g.Expect(s.Serve(context.Background(), ln)).To(MatchError(ContainSubstring("loopback address only")))
}

// fakeListener only has an address: Serve must refuse it before accepting.
type fakeListener struct{ addr net.Addr }

func (l fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeListener) Close() error              { return nil }
func (l fakeListener) Addr() net.Addr            { return l.addr }
