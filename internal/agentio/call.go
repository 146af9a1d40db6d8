/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// A call is one typed operation on an agent (ops.go builds each): its kind,
// its key (one of each kind per Delegation), its state and its deadline.

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
)

// Kind is what a call does. A Delegation has at most one call of each kind
// queued or running.
type Kind string

const (
	// KindStart starts following a task: it sends the first message, looks
	// an earlier send up, or adopts spec.taskID, one of them at a time.
	KindStart Kind = "start"
	// KindGet reads the task back; with a lease it renews it.
	KindGet Kind = "get"
	// KindCancel sends CancelTask.
	KindCancel Kind = "cancel"
	// KindReply sends a reply to a task that asked for input.
	KindReply Kind = "reply"
)

// priority orders the calls waiting for room in one Agent's pool: cancels
// and card reads first (they stop work and free the agent; nothing is sent
// to an Agent whose card is not read), then reads and renewals (a late
// renewal lets a lease lapse and loses work already done), then new work
// (sends, replies, look-ups), which only waits.
func (k Kind) priority() int {
	switch k {
	case KindCancel, KindCard:
		return 0
	case KindGet:
		return 1
	}
	return 2
}

const priorities = 3

// Defaults for the pools.
const (
	DefaultCallsPerAgent  = 8
	DefaultMaxCallTimeout = 30 * time.Second
)

// Key names one call: a Delegation and the kind of call.
type Key struct {
	Delegation types.NamespacedName
	Kind       Kind
}

// Call is one operation on an agent, made on that Agent's pool. Only the
// operations of ops.go build one.
type Call struct {
	Key
	// Agent names the pool (the Agent's namespace and name).
	Agent types.NamespacedName
	// PoolSize is the Agent's spec.maxConcurrentCalls; 0 means the default.
	PoolSize int
	// Timeout is the Agent's spec.requestTimeout; 0 means the operator's maximum.
	Timeout time.Duration
	// Within, when set, ends the call no later than this long after it
	// left: a scheduled read gets its interval from when it is sent, not
	// from when it was due, so a read that waited for room is not cut
	// before the agent could answer it (and then asked again).
	Within time.Duration
	// Lapses, for a renewal, is when the task's lease lapses unless this
	// read is answered: renewals waiting for room go in that order.
	Lapses time.Time
	// Urgent: the result wakes its Delegation through UrgentEvents, which
	// the controller puts ahead of other work (a send's answer: until it is
	// applied, the task is not followed and its lease is not renewed).
	Urgent bool
	// do makes the call (see ops.go: every operation builds its own).
	do func(ctx context.Context) Answer
	// done, when set, receives the answer instead of the answer store.
	done func(Answer)
	// poll: a read of the scheduler for a task without a lease (it waits
	// behind renewals when reads are limited, see readlimit.go).
	poll bool
	// sends: the call sends a Delegation's first message (its leaving is
	// recorded); lookUp: it looks such a send's task up.
	sends, lookUp bool
	// mayStart: see Target.MayStart.
	mayStart func() error
	// leaveBy: a send that has not left by then never leaves (its deadline
	// was recorded from it); proofAfter: a look-up that finds no task proves
	// nothing before it, unless this process made the send itself.
	leaveBy, proofAfter time.Time
	// fencedSend: the send looked up was made by a build that fences its
	// calls (see LookUpRequest.Fenced).
	fencedSend bool
	// Trace is the calling Delegation's span context (tracing.Of); the
	// call's span is its child. TaskID names the task, when known.
	Trace  trace.SpanContext
	TaskID string
	// due and leased: a scheduled read, when it was due and whether it
	// renews a lease (for tether_scheduled_read_lateness_seconds).
	due    time.Time
	leased bool
}

// CallState is what the Dispatcher knows of a call that has not finished.
type CallState struct {
	// Pending: the call is queued or running.
	Pending bool
	// Running: it holds a slot in the pool.
	Running bool
	// Queued is when it was submitted.
	Queued time.Time
}

// CallTimeout is how long one call to an agent may take: what the Agent
// asks (spec.requestTimeout; 0 when unset), capped by the operator-wide
// maximum (--max-call-timeout; 0 means DefaultMaxCallTimeout).
func CallTimeout(asked, maximum time.Duration) time.Duration {
	if maximum <= 0 {
		maximum = DefaultMaxCallTimeout
	}
	if asked > 0 && asked < maximum {
		return asked
	}
	return maximum
}
