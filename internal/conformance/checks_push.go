/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// CheckPushDelivery: a task's updates reach the receiver its send named.
// A SHOULD: the operator reads tasks back whether or not notifications come.
const CheckPushDelivery = "push.delivery"

const pushTitle = "a task's updates reach the push receiver its send names"

// maxPushBody bounds what the receiver reads of a notification.
const maxPushBody = 64 << 10

func (r *runner) checkPush(ctx context.Context) {
	id := CheckPushDelivery
	switch {
	case !r.card.Chosen.PushNotifications:
		r.record(id, pushTitle, Should, NotAdvertised, "the card does not declare push notifications")
		return
	case r.main == nil:
		r.record(id, pushTitle, Should, NotRun, "no usable interface within the agent's origins")
		return
	}
	recv, err := r.listenForPush(ctx)
	if err != nil {
		r.record(id, pushTitle, Should, NotRun, "%v", err)
		return
	}
	defer recv.close()
	msgID, ctxID := r.ids("push")
	start := r.opts.Now()
	t, err := r.send(ctx, r.main, a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Quick,
		Push: &a2a.PushTarget{URL: recv.url, Token: recv.token}})
	switch {
	case err != nil:
		r.record(id, pushTitle, Should, Fail, "the card declares push notifications; SendMessage with a receiver: %s", describeErr(err))
		return
	case t.Message:
		r.record(id, pushTitle, Should, NotRun, "answered with a message, no task: tether cannot follow its work")
		return
	}
	select {
	case <-recv.got(t.ID):
		r.record(id, pushTitle, Should, Pass, "a notification of task %s came %v after the send", t.ID, r.opts.Now().Sub(start).Round(r.roundTo()))
	case <-time.After(r.opts.Within):
		r.record(id, pushTitle, Should, Fail, "no notification of task %s within %v at %s%s", t.ID, r.opts.Within, recv.url, recv.refusedNote())
	case <-ctx.Done():
		r.record(id, pushTitle, Should, NotRun, "the run ended before a notification came")
	}
}

// pushReceiver is the run's own receiver: it accepts notifications that
// present its token and notes the tasks they are about.
type pushReceiver struct {
	url, token string
	srv        *http.Server

	mu      sync.Mutex
	tasks   map[string]chan struct{}
	seen    map[string]bool
	refused int
}

// listenForPush starts the receiver at Options.PushListen (its URL
// Options.PushURL). Without them it listens on loopback when the agent is on
// loopback too; otherwise the agent could not reach it.
func (r *runner) listenForPush(ctx context.Context) (*pushReceiver, error) {
	listen, base := r.opts.PushListen, r.opts.PushURL
	if listen == "" {
		u, err := url.Parse(r.card.Chosen.URL)
		if err != nil || !isLoopback(u.Hostname()) {
			return nil, errors.New("no receiver the agent can reach: give --push-listen and --push-url (an address the agent can post to)")
		}
		listen = "127.0.0.1:0"
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	p := &pushReceiver{url: strings.TrimRight(base, "/") + "/" + MessageIDPrefix + r.opts.RunID,
		token: rand.Text(), tasks: map[string]chan struct{}{}, seen: map[string]bool{}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (p *pushReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || a2a.PresentedPushToken(req) != p.token {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		w.Header().Set("Connection", "close")
		http.Error(w, "bad notification token", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(req.Body, maxPushBody))
	if id := a2a.NotifiedTaskID(body); id != "" {
		p.arrive(id)
	}
	w.WriteHeader(http.StatusNoContent)
}

// arrive notes a notification of a task: its channel closes on the first.
func (p *pushReceiver) arrive(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.seen[id] {
		p.seen[id] = true
		close(p.chanOf(id))
	}
}

// got is closed once a notification of the task came.
func (p *pushReceiver) got(id string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chanOf(id)
}

func (p *pushReceiver) chanOf(id string) chan struct{} {
	ch, ok := p.tasks[id]
	if !ok {
		ch = make(chan struct{})
		p.tasks[id] = ch
	}
	return ch
}

func (p *pushReceiver) refusedNote() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refused == 0 {
		return ""
	}
	return "; " + itoa(p.refused) + " posts without the token were refused"
}

func (p *pushReceiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}
