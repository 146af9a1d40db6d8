/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentio

// What may leave the pools, decided when a call leaves (not when it was
// queued): a call that starts or ends work at an agent leaves only while
// this process holds the Lease of its shard and the Dispatcher has not been
// stopped; a send never leaves while a cancel of its Delegation is on its
// way or answered; and a cancel that comes while its Delegation's send is
// on its way waits for the send, so its look-up comes after it.

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/shrinkmap"
)

// Fence says whether this process holds the Lease under which calls to
// agents may be made (internal/shard: the shard's Lease, renewed within its
// duration and not being given back).
type Fence interface {
	Holds() bool
}

// ErrFenced is the error of a call that did not leave: this process did not
// hold its shard's Lease, or was stopping, when the call's turn came.
var ErrFenced = errors.New("the call was not made: this process does not hold its shard's Lease (a standby, or stopping)")

// fenced reports calls that start or end work at an agent.
func (k Kind) fenced() bool {
	return k == KindStart || k == KindReply || k == KindCancel
}

// refusal is why the call may not leave now, nil when it may; it is called
// with d.mu held, at the moment the call would leave.
func (d *Dispatcher) refusal(c Call) error {
	if d.stopping || (c.Kind.fenced() && d.Fence != nil && !d.Fence.Holds()) {
		return ErrFenced
	}
	if c.Kind == KindStart && d.cancelling(c.Delegation) {
		return errCancelled
	}
	if c.sends && !c.leaveBy.IsZero() && time.Now().After(c.leaveBy) {
		return errLeaveByPassed
	}
	if c.sends && c.mayStart != nil {
		return c.mayStart()
	}
	return nil
}

// errLeaveByPassed: the send waited for room past the time its recorded
// deadline allowed it to leave.
var errLeaveByPassed = errors.New("the send was not made: it waited for room in the Agent's pool past its recorded deadline; " +
	"it is made again under a new one")

// errCancelled: a cancel of the Delegation is on its way or answered; the
// send would start a task the cancel has already looked for.
var errCancelled = errors.New("the call was not made: the Delegation is being cancelled")

// cancelling reports a cancel of the Delegation queued, waiting for its send,
// running or answered; it is called with d.mu held.
func (d *Dispatcher) cancelling(key types.NamespacedName) bool {
	k := Key{Delegation: key, Kind: KindCancel}
	_, pending := d.calls[k]
	_, answered := d.results[k]
	_, waiting := d.cancelAfterSend[key]
	return pending || answered || waiting
}

// refuse ends a call that may not leave with err, as a call that was never
// made (a2a.ClassNotMade); it is called without d.mu held.
func (d *Dispatcher) refuse(q *pending, err error) {
	c := q.call
	res := Answer{Err: a2a.NotMade(err), Class: a2a.ClassNotMade, Queued: q.queued, Finished: time.Now()}
	d.mu.Lock()
	if d.calls[c.Key] == q {
		d.calls = shrinkmap.Delete(d.calls, c.Key, &d.peaks.calls)
	}
	switch {
	case c.Kind == KindCard:
		d.cardDone(c.Agent.Namespace)
	case c.done == nil:
		d.results[c.Key] = res
	}
	d.ended(c)
	d.mu.Unlock()
	switch {
	case c.done != nil:
		c.done(res)
	case c.Kind != KindCard:
		d.wake(c.Delegation, c.Urgent)
	}
}

// cancelAfter queues a cancel now, or, while the Delegation's send runs,
// keeps it until that send ended; a send still queued is dropped (it never
// reached the agent). It is called with d.mu held.
func (d *Dispatcher) cancelAfter(c Call) bool {
	start := Key{Delegation: c.Delegation, Kind: KindStart}
	d.dropLocked(start)
	if d.cancelling(c.Delegation) {
		return false
	}
	if q, ok := d.calls[start]; ok && q.running {
		d.cancelAfterSend[c.Delegation] = &pending{call: c, queued: time.Now()}
		return true
	}
	return d.queue(c)
}

// ended queues what waited for this call to end: a reconciler's call of
// the same key that came while the scheduler's ran, and the cancel that
// waited for this send. It is called with d.mu held.
func (d *Dispatcher) ended(c Call) {
	if next, ok := d.after[c.Key]; ok {
		d.after = shrinkmap.Delete(d.after, c.Key, &d.peaks.after)
		d.queue(next)
	}
	if c.Kind != KindStart {
		return
	}
	if w, ok := d.cancelAfterSend[c.Delegation]; ok {
		delete(d.cancelAfterSend, c.Delegation)
		d.toPool(w.call, w.queued)
	}
}

// sentTask is the task the Delegation's last send (or look-up) answered
// with and nobody took yet: a cancel that waited for the send cancels it
// without looking it up.
func (d *Dispatcher) sentTask(key types.NamespacedName) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if res, ok := d.results[Key{Delegation: key, Kind: KindStart}]; ok && res.Task != nil {
		return res.Task.ID
	}
	return ""
}

// DefaultDrainTimeout bounds how long a stopping Dispatcher waits for the
// calls on their way: long enough for an agent's ordinary answer, short
// enough that the Lease is given back (and the tasks' leases renewed by the
// successor) well within a lease's ttl. A send still on its way after it is
// covered by what its Delegation records (the send's deadline): a successor
// takes no look-up made before that deadline as proof.
const DefaultDrainTimeout = 5 * time.Second

// Start holds the Dispatcher open while this process leads (a manager
// runnable of the leader election group, so it stops before the Lease is
// given back): when ctx ends, no call leaves any more, and the calls on
// their way are awaited for up to DrainTimeout, so their answers are
// recorded before the Lease is given back.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	d.leadingSince = time.Now()
	d.mu.Unlock()
	<-ctx.Done()
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		d.onTheirWay.Wait()
		close(ended)
	}()
	drain := d.DrainTimeout
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	select {
	case <-ended:
	case <-time.After(drain):
	}
	return nil
}

// NeedLeaderElection is true: calls are made by the leader only.
func (d *Dispatcher) NeedLeaderElection() bool { return true }
