/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// countingListener counts every byte the server reads from its connections.
type countingListener struct {
	net.Listener
	read *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, read: l.read}, nil
}

type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// zeros is an endless body that costs the sender no memory.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Many concurrent posts with 1 MiB bodies and no token are refused from
// their headers: the server reads a few KiB of each, not the bodies. A post
// with the token and an oversized body is accepted as a wake-up, its body
// read only up to the bound.
func TestPushReceiverRefusesUnauthenticatedBodiesUnread(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	d, p := pushReceiverFor(t, g, "")
	ns := d.Namespace
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	var read atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.serve(ctx, countingListener{Listener: ln, read: &read}) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("push receiver: %v", err)
		}
	})

	const posts, bodySize = 100, 1 << 20
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(path, token string, size int64) (int, error) {
		req, err := http.NewRequest(http.MethodPost, base+path, io.LimitReader(zeros{}, size))
		if err != nil {
			return 0, err
		}
		req.ContentLength = size
		if token != "" {
			req.Header.Set("A2A-Notification-Token", token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err // the server closed the connection on an unread body
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}

	// The heap's peak during the flood, sampled.
	var heapBefore runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&heapBefore)
	var peak atomic.Uint64
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-sampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	var accepted atomic.Int32
	for i := range posts {
		wg.Go(func() {
			path := "/push/" + ns + "/task"
			if i%2 == 1 {
				path = "/push/" + ns + "/missing"
			}
			if code, err := post(path, "forged", bodySize); err == nil && code < 300 {
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	close(sampling)
	<-sampled
	g.Expect(accepted.Load()).To(BeZero())
	growth := int64(peak.Load()) - int64(heapBefore.HeapInuse)
	// Reported, not asserted: the garbage collector frees read bodies fast
	// enough that the heap alone does not tell the two designs apart; the
	// bytes read below do.
	t.Logf("heap in use grew by at most %d KiB during the flood", growth>>10)
	t.Logf("%d unauthenticated posts of %d bytes: %d bytes read by the server", posts, bodySize, read.Load())
	// Headers plus what the connection's buffer happened to pull in: a few KiB
	// per post, against 100 MiB of bodies sent.
	g.Expect(read.Load()).To(BeNumerically("<", posts*32<<10), "bytes read for %d unauthenticated posts", posts)
	g.Expect(p.events).To(BeEmpty())

	before := read.Load()
	code, err := post("/push/"+ns+"/task", p.Target(d).Token, bodySize)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusNoContent))
	t.Logf("an authenticated post of %d bytes: %d bytes read", bodySize, read.Load()-before)
	g.Expect(read.Load()-before).To(BeNumerically("<", 64<<10), "an oversized notification is read up to the bound only")
	g.Expect(p.events).To(HaveLen(1))
}

func TestPushKeyMustHave32Bytes(t *testing.T) {
	g := NewWithT(t)
	_, err := NewPushReceiver(":0", "http://push.example", make([]byte, 31), nil)
	g.Expect(err).To(MatchError(ContainSubstring("at least 32")))
	_, err = NewPushReceiver(":0", "http://push.example", make([]byte, 32), nil)
	g.Expect(err).NotTo(HaveOccurred())
}
