/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/shrinkmap"
)

// memory is everything this process remembers about a Delegation between
// passes: its own maps, and the calls (the Dispatcher) and the followed task
// (the Scheduler) it holds for it. Nothing in it is needed after a restart:
// what a successor must know is in the object.
type memory struct {
	// sentTerms holds, per Delegation, the terms of a send on its way.
	sentTerms sync.Map
	// handled is the resourceVersion each Delegation had when this process
	// last finished a pass on it.
	handled sync.Map
	// admission holds the places taken at Agents with a cap on tasks.
	admission admission
	// quota holds the Delegations let through their namespace's quotas.
	quota quotaAdmission
	// quotaLine carries where a quota place was given back.
	quotaLine chan event.TypedGenericEvent[placeGivenBack]
	// cascaded records the cascades dispatched from the cache.
	cascaded cascaded

	calls     *agentio.Dispatcher
	scheduler *agentio.Scheduler
}

// forget drops what the process holds about a Delegation that is gone.
func (m *memory) forget(key types.NamespacedName) {
	m.scheduler.Untrack(key)
	m.calls.Forget(key)
	m.handled.Delete(key)
	m.cascaded.forget(key)
	m.sentTerms.Delete(key)
}

// admission remembers the tasks this process admitted under an Agent's
// spec.maxConcurrentTasks whose send marker the cache may not show yet, so
// two passes at once cannot both take the last place.
type admission struct {
	mu       sync.Mutex
	admitted map[types.UID]types.NamespacedName // task -> Agent
}

// release forgets that this process admitted uid (see releaseUnsent).
func (a *admission) release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.admitted, uid)
}

// cascaded remembers the parents whose subtree was already dispatched, so a
// parent's later passes do not send CancelTask again. Both maps are keyed by
// Delegation and pruned when it is gone (forget), so they hold only objects
// that exist.
type cascaded struct {
	mu sync.Mutex
	// roots: the UID of each parent (by key) whose subtree was dispatched; a
	// new object of the same name has another UID and cascades again.
	roots map[types.NamespacedName]types.UID
	// reasons: descendants whose CancelTask a cascade dispatched, and why.
	// A descendant that reads its task back as canceled before its cache
	// shows the parent's end reports the parent's reason, not Remote.
	reasons map[types.NamespacedName]string
	// peaks are the maps' sizes for shrinkmap.Delete: a churn of 10,000
	// Delegations would otherwise leave both at the table of 10,000.
	peaks struct{ roots, reasons int }
}

func (c *cascaded) record(key types.NamespacedName, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reasons == nil {
		c.reasons = map[types.NamespacedName]string{}
	}
	c.reasons[key] = reason
}

// reason reports (and with forget drops) why a cascade cancelled key.
func (c *cascaded) reason(key types.NamespacedName, forget bool) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.reasons[key]
	if forget {
		c.reasons = shrinkmap.Delete(c.reasons, key, &c.peaks.reasons)
	}
	return r, ok
}

func (c *cascaded) first(key types.NamespacedName, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roots == nil {
		c.roots = map[types.NamespacedName]types.UID{}
	}
	if c.roots[key] == uid {
		return false
	}
	c.roots[key] = uid
	return true
}

// forget drops what is kept of a Delegation that is gone.
func (c *cascaded) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roots = shrinkmap.Delete(c.roots, key, &c.peaks.roots)
	c.reasons = shrinkmap.Delete(c.reasons, key, &c.peaks.reasons)
}

// size is how many entries are kept (for tests).
func (c *cascaded) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.roots) + len(c.reasons)
}
