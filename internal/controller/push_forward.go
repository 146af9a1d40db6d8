/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// forwardedHeader marks a notification a standby handed over: it is
// served where it lands, never passed on again.
const forwardedHeader = "X-Tether-Forwarded-By"

// standby reports whether the notification is to be handed to the leader.
func (p *PushReceiver) standby(r *http.Request) bool {
	return p.Leader != nil && r.Header.Get(forwardedHeader) == "" && !p.Leader.Leading()
}

// forward posts the notification, token and body as they came, to the
// shard's leader and answers with the leader's status. Without a known
// leader (a hand-over under way) it answers 503: the agent may retry, and
// the new leader reads every task at once anyway.
func (p *PushReceiver) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), forwardTimeout)
	defer cancel()
	base, err := p.Leader.LeaderPushURL(ctx)
	if err != nil {
		logf.FromContext(ctx).V(1).Info("no leader to hand a notification to", "reason", err.Error())
		http.Error(w, "no leader of this shard right now", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, "no leader of this shard right now", http.StatusServiceUnavailable)
		return
	}
	for _, h := range []string{"A2A-Notification-Token", "X-A2A-Notification-Token", "Authorization", "Content-Type"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	host, _ := os.Hostname()
	req.Header.Set(forwardedHeader, host)
	resp, err := p.forwarder.Do(req)
	if err != nil {
		http.Error(w, "the shard's leader did not answer", http.StatusServiceUnavailable)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPushBodyBytes))
	pushForwarded.Inc()
	w.WriteHeader(resp.StatusCode)
}

// Endpoint is the base URL at which this process's receiver is reached by
// the other replicas: the listening address, or with a wildcard listen
// address (":8082") the pod's own IP (POD_IPS, set by the chart).
func (p *PushReceiver) Endpoint(ctx context.Context) (string, error) {
	select {
	case <-p.listening:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	host, port, err := net.SplitHostPort(p.addr)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		own, _, _ := strings.Cut(os.Getenv("POD_IPS"), ",")
		if own = strings.TrimSpace(own); own == "" {
			return "", fmt.Errorf("the receiver listens on %s and POD_IPS is not set: the other replicas cannot reach it", p.addr)
		}
		host = own
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
