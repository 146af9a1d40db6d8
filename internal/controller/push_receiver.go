/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/netutil"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/internal/a2a"
)

// PushReceiver accepts A2A push notifications and has the task each is
// about read at once, so a task is followed as soon as it changes; polling
// stays as the fallback. A notification that carries the ended task whole
// settles it without a read; one that carries an artifact alone costs
// nothing. Delivery is at least once and a read is idempotent, so
// duplicates cost one extra read.
type PushReceiver struct {
	// Addr is where the receiver listens (--push-listen).
	Addr string
	// BaseURL is how agents reach Addr (--push-url).
	BaseURL string
	// Key signs the per-Delegation tokens. Tokens handed out before a
	// restart with a new key are refused, and those tasks are polled.
	Key    []byte
	Reader client.Reader

	events chan event.GenericEvent
	// readNow, when set, has the task read back at once: the notification
	// says it changed. It reports whether the task is followed (then the
	// read's answer wakes the Delegation).
	readNow func(types.NamespacedName) bool
	// answer, when set, makes an ended task a notification carried whole
	// the answer of the task's read; false when the task is not followed.
	answer func(types.NamespacedName, *a2a.Task) bool
	// Leader, when set, is asked whether this process leads its shard; a
	// standby hands each checked notification to the leader (push_forward.go).
	Leader    PushLeader
	forwarder *http.Client
	// listening is closed once the receiver listens at addr.
	listening chan struct{}
	addr      string
}

// Bounds of the push receiver. The port is reachable by whoever reaches the
// operator's pod: a caller without a valid token costs one header read, never
// a body read, and connections, bodies and slow clients are all bounded.
const (
	// MinPushKeyBytes is the shortest key accepted for signing tokens.
	MinPushKeyBytes = 32
	// maxPushBodyBytes is how much of a notification is read. A body names
	// the task, and may carry the ended task whole (then it is applied as
	// read); a larger one is accepted as a wake-up without being read
	// further, and the task is read.
	maxPushBodyBytes   = 8 << 10
	maxPushHeaderBytes = 16 << 10
	// maxPushConns caps open connections; more wait in the listen backlog.
	maxPushConns = 128
)

// NewPushReceiver returns a receiver; a nil key gets a random one. A key
// shorter than MinPushKeyBytes is refused.
func NewPushReceiver(addr, baseURL string, key []byte, reader client.Reader) (*PushReceiver, error) {
	if len(key) == 0 {
		key = make([]byte, MinPushKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) < MinPushKeyBytes {
		return nil, fmt.Errorf("the push key has %d bytes, at least %d are needed (for example: head -c 32 /dev/urandom)",
			len(key), MinPushKeyBytes)
	}
	return &PushReceiver{Addr: addr, BaseURL: strings.TrimRight(baseURL, "/"), Key: key, Reader: reader,
		events: make(chan event.GenericEvent, 1024), listening: make(chan struct{}),
		forwarder: &http.Client{Timeout: forwardTimeout}}, nil
}

// Start serves until ctx ends (a manager Runnable).
func (p *PushReceiver) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return err
	}
	logf.FromContext(ctx).Info("push notification receiver listening", "addr", ln.Addr().String(), "url", p.BaseURL)
	p.addr = ln.Addr().String()
	close(p.listening)
	return p.serve(ctx, ln)
}

// serve serves on ln, with at most maxPushConns connections (and
// maxPushConnsPerSource of one source address), until ctx ends.
func (p *PushReceiver) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    maxPushHeaderBytes,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(limitPerSource(netutil.LimitListener(ln, maxPushConns), maxPushConnsPerSource)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection is false: every replica accepts notifications.
func (p *PushReceiver) NeedLeaderElection() bool { return false }

// PushLeader tells a receiver whether its process leads its shard, and a
// standby where the leader receives notifications.
//
// A shard's push Service sends a notification to any of its replicas, and
// only the leader follows the shard's tasks: a standby's scheduler and
// controllers do not run. So a standby checks the token (with the key all
// replicas share) and hands the notification to the leader as it came.
type PushLeader interface {
	Leading() bool
	// LeaderPushURL is the base URL of the leader's receiver.
	LeaderPushURL(ctx context.Context) (string, error)
}

// forwardTimeout bounds handing a notification to the leader.
const forwardTimeout = 5 * time.Second
