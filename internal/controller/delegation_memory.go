/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tether-dev/tether/internal/agentio"
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
