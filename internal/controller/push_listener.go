/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"net"
	"sync"
)

// maxPushConnsPerSource caps the connections one source address holds at
// once: a single caller sending headers slowly cannot take all of
// maxPushConns. Agents behind one gateway share its address, so the cap
// leaves them room.
const maxPushConnsPerSource = 32

// perSourceListener closes, at once, a connection from a source that
// already holds limit connections.
type perSourceListener struct {
	net.Listener
	limit int
	mu    sync.Mutex
	open  map[string]int
}

func limitPerSource(ln net.Listener, limit int) *perSourceListener {
	return &perSourceListener{Listener: ln, limit: limit, open: map[string]int{}}
}

func (l *perSourceListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		source := sourceOf(c.RemoteAddr())
		l.mu.Lock()
		full := l.open[source] >= l.limit
		if !full {
			l.open[source]++
		}
		l.mu.Unlock()
		if full {
			_ = c.Close() // gives its slot of the overall cap back
			continue
		}
		return &sourceConn{Conn: c, release: func() { l.release(source) }}, nil
	}
}

func (l *perSourceListener) release(source string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[source]--; l.open[source] <= 0 {
		delete(l.open, source)
	}
}

func sourceOf(a net.Addr) string {
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// sourceConn gives its source's count back once, when closed.
type sourceConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *sourceConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
