/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package ui is the local web view of `kubectl tether ui`: every delegation
// tree of a namespace (or of all), live from a watch made with the user's own
// credentials, served read-only on a loopback address. The page, its script
// and its styles are embedded in the binary; it loads nothing from elsewhere.
package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed assets
var assets embed.FS

// heartbeat keeps an idle stream open through proxies and lets the page see
// a dead server within a minute.
const heartbeat = 15 * time.Second

// contentSecurityPolicy allows the page only its own script, styles and
// stream: agent text shown on it can never load or run anything.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves the view of one namespace ("" for every namespace).
type Server struct {
	hub    *hub
	client client.WithWatch
	// token is the secret first path segment: another user of the machine can
	// reach a loopback port too, and must not read the cluster with our credentials.
	token string
}

// New makes a Server that watches with c (the user's kubeconfig) in namespace.
func New(c client.WithWatch, namespace string) (*Server, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return &Server{hub: newHub(namespace, time.Now), client: c, token: hex.EncodeToString(b)}, nil
}

// Path is the page's path on the server, secret token included.
func (s *Server) Path() string { return "/" + s.token + "/" }

// Serve watches and serves on ln until ctx ends. ln must be a loopback
// listener: the Host check below accepts only loopback names.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return fmt.Errorf("the view serves on a loopback address only, not %s", ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler:           s.handler(addr.Port),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	watched := make(chan error, 1)
	go func() { watched <- watchAll(ctx, s.client, s.hub.namespace, s.hub) }()
	go func() {
		<-ctx.Done()
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdown)
	}()
	err := srv.Serve(ln)
	cancel()
	if werr := <-watched; werr != nil {
		return werr
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// handler serves the page under the token, and nothing else.
func (s *Server) handler(port int) http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET "+s.Path()+"stream", http.HandlerFunc(s.stream))
	mux.Handle("GET "+s.Path(), http.StripPrefix(strings.TrimSuffix(s.Path(), "/"), files))
	mux.Handle("GET /"+s.token, http.RedirectHandler(s.Path(), http.StatusMovedPermanently))
	hosts := allowedHosts(port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A page of another site that rebinds its DNS name to 127.0.0.1 still
		// sends its own name as Host: refuse it.
		if !hosts[r.Host] {
			http.Error(w, "unknown host", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the view is read-only", http.StatusMethodNotAllowed)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func allowedHosts(port int) map[string]bool {
	hosts := map[string]bool{}
	for _, name := range []string{"127.0.0.1", "localhost", "[::1]"} {
		hosts[fmt.Sprintf("%s:%d", name, port)] = true
	}
	return hosts
}

// stream sends the page a snapshot, then every change, as server-sent events.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	snap, changes, cancel := s.hub.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	data, err := json.Marshal(snap)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := writeEvent(w, "snapshot", data); err != nil {
		return
	}
	flusher.Flush()
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case m, open := <-changes:
			if !open {
				return // too far behind: the page reconnects and starts over
			}
			if err := writeEvent(w, m.name, m.data); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}

// writeEvent writes one server-sent event; JSON has no raw newlines, so the
// data is one line.
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	return err
}
