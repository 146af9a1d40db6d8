/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/test/cluster"
)

// pod is one replica of a Deployment as Kubernetes runs it: when its
// operator process exits on its own (a leader that lost its Lease exits),
// the process is started again with the same command line, as the kubelet
// restarts a container; Stop and Kill end the pod itself.
type pod struct {
	name string
	opts cluster.ProcessOptions

	mu         sync.Mutex
	containers []*cluster.Process // the first process and every restart
	ended      bool
}

// restartDelay is how long a pod waits before it starts its process again.
const restartDelay = time.Second

func startPod(t *testing.T, name string, opts cluster.ProcessOptions) (*pod, error) {
	first, err := cluster.StartProcess(opts)
	if err != nil {
		return nil, err
	}
	p := &pod{name: name, opts: opts, containers: []*cluster.Process{first}}
	go p.restartOnExit(t)
	return p, nil
}

func (p *pod) restartOnExit(t *testing.T) {
	for {
		cur := p.current()
		<-cur.Done()
		time.Sleep(restartDelay)
		p.mu.Lock()
		if p.ended {
			p.mu.Unlock()
			return
		}
		opts := p.opts
		opts.Name = fmt.Sprintf("%s (restart %d)", p.name, len(p.containers))
		opts.LogPath = fmt.Sprintf("%s.%d", p.opts.LogPath, len(p.containers))
		next, err := cluster.StartProcess(opts)
		if err == nil {
			p.containers = append(p.containers, next)
		}
		p.mu.Unlock()
		if err != nil {
			t.Errorf("restarting %s: %v", p.name, err)
			return
		}
		t.Logf("%s exited on its own and was started again:\n%s", p.name, cluster.Tail(cur.Log(), 5))
	}
}

func (p *pod) current() *cluster.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.containers[len(p.containers)-1]
}

// processes are every process the pod ran.
func (p *pod) processes() []*cluster.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*cluster.Process(nil), p.containers...)
}

func (p *pod) Name() string { return p.name }

// Log is what the pod's current process printed.
func (p *pod) Log() string { return p.current().Log() }

// Exited: the pod ended, or its process exited and waits to be restarted.
func (p *pod) Exited() bool { return p.current().Exited() }

// WaitFor waits until the current process prints re.
func (p *pod) WaitFor(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	return p.current().WaitFor(ctx, re)
}

// end marks the pod ended, so its process is not started again, and
// returns that process.
func (p *pod) end() *cluster.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	return p.containers[len(p.containers)-1]
}

// Stop deletes the pod: SIGTERM, SIGKILL after grace.
func (p *pod) Stop(grace time.Duration) error { return p.end().Stop(grace) }

// Kill ends the pod as a node failure would: SIGKILL.
func (p *pod) Kill() { p.end().Kill() }
