/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/internal/agentio"
)

// Options are the operator's tunables for Delegations.
type Options struct {
	// CancelTimeout bounds how long CancelTask is retried before a finalizer
	// lets go (the lease bounds the orphan).
	CancelTimeout time.Duration
	// SendTimeout is deprecated and ignored: a send without a task id is
	// looked up and made again by evidence until the Delegation's deadline
	// (its budget.timeout or an ancestor's); without one, for as long as its
	// Agent exists.
	SendTimeout time.Duration
	// MaxDepth bounds parentRef chains.
	MaxDepth int
	// ResultTextLimit bounds status.result.text (bytes).
	ResultTextLimit int
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// MinHandOverTTL, when set, is the shortest lease.ttl that survives a
	// leader hand-over; a Delegation asking for less is warned.
	MinHandOverTTL time.Duration
}

func (o Options) withDefaults() Options {
	if o.CancelTimeout == 0 {
		o.CancelTimeout = 2 * time.Minute
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = 16
	}
	if o.ResultTextLimit == 0 {
		o.ResultTextLimit = 16 << 10
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 4
	}
	return o
}

// DelegationReconciler sends each Delegation's task and follows it.
type DelegationReconciler struct {
	client.Client
	// APIReader reads around the cache: a send is only made from a fresh read.
	APIReader client.Reader
	Connector *agentio.Connector
	// Calls runs every A2A call on the Agent's pool; nil builds one with
	// the defaults.
	Calls *agentio.Dispatcher
	// Scheduler renews and polls running tasks; nil builds one.
	Scheduler *agentio.Scheduler
	Recorder  events.EventRecorder
	Options   Options
	// Push, when set, is registered with agents that push notifications.
	Push *PushReceiver
	// Clock is the clock; tests may replace it.
	Clock clock.PassiveClock

	// memory is what this process remembers of each Delegation between
	// passes (delegation_memory.go).
	memory memory
	// afterCharge, when set, runs after a child charged its parent and
	// before its own status is written: tests stop the operator there.
	afterCharge func(ctx context.Context)
	// beforeReplySend, when set, runs after a reply was claimed in status
	// and before it is sent: tests stop the operator there.
	beforeReplySend func(ctx context.Context)
}

func (r *DelegationReconciler) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

func (r *DelegationReconciler) now() time.Time { return r.clock().Now() }
