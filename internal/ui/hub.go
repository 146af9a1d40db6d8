/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ui

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"
)

// Bounds on what the view holds and sends.
const (
	eventsPerNode  = 50  // the most recent Events kept for each Delegation
	subscriberSlot = 256 // messages a slow page may fall behind before it is cut off (it reconnects)
)

// message is one server-sent event: its name and JSON data.
type message struct {
	name string
	data []byte
}

// snapshot is what a page receives first: everything the view holds.
type snapshot struct {
	ServerTime time.Time         `json:"serverTime"`
	Namespace  string            `json:"namespace,omitempty"` // "" with -A
	Nodes      []node            `json:"nodes"`
	Events     []event           `json:"events"`
	Problems   map[string]string `json:"problems"` // what a watch could not read, by source
}

// hub holds the latest state of every Delegation and its Events, as the
// watches deliver them, and fans each change out to the open pages.
type hub struct {
	namespace string
	now       func() time.Time

	mu       sync.Mutex
	nodes    map[string]node
	events   map[string][]event // by the Delegation's key, oldest first
	problems map[string]string
	subs     map[chan message]struct{}
}

func newHub(namespace string, now func() time.Time) *hub {
	return &hub{namespace: namespace, now: now, nodes: map[string]node{}, events: map[string][]event{},
		problems: map[string]string{}, subs: map[chan message]struct{}{}}
}

// subscribe returns the current state and a channel of every change after
// it, taken under one lock so no change falls between them. The channel is
// closed when the page falls too far behind or cancel is called.
func (h *hub) subscribe() (snapshot, <-chan message, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := snapshot{ServerTime: h.now().UTC(), Namespace: h.namespace, Nodes: make([]node, 0, len(h.nodes)),
		Events: []event{}, Problems: map[string]string{}}
	for _, n := range h.nodes {
		s.Nodes = append(s.Nodes, n)
	}
	slices.SortFunc(s.Nodes, func(a, b node) int { return cmp.Compare(a.Key, b.Key) })
	for _, evs := range h.events {
		s.Events = append(s.Events, evs...)
	}
	maps.Copy(s.Problems, h.problems)
	ch := make(chan message, subscriberSlot)
	h.subs[ch] = struct{}{}
	return s, ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.drop(ch)
	}
}

// drop must be called with mu held.
func (h *hub) drop(ch chan message) {
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// publish must be called with mu held. A page that cannot keep up is cut
// off rather than allowed to hold memory or slow the others; its
// EventSource reconnects and starts from a fresh snapshot.
func (h *hub) publish(name string, v any) {
	if len(h.subs) == 0 {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return // every value sent is a plain struct of this file
	}
	for ch := range h.subs {
		select {
		case ch <- message{name: name, data: data}:
		default:
			h.drop(ch)
		}
	}
}

func (h *hub) upsertNode(n node) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[n.Key] = n
	h.publish("node", n)
}

func (h *hub) deleteNode(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.nodes, key)
	delete(h.events, key)
	h.publish("gone", map[string]string{"key": key})
}

func (h *hub) upsertEvent(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := slices.DeleteFunc(h.events[ev.Key], func(e event) bool { return e.UID == ev.UID })
	list = append(list, ev)
	slices.SortStableFunc(list, func(a, b event) int { return a.LastSeen.Compare(b.LastSeen) })
	if len(list) > eventsPerNode {
		list = list[len(list)-eventsPerNode:]
	}
	h.events[ev.Key] = list
	h.publish("kevent", ev)
}

func (h *hub) deleteEvent(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events[ev.Key] = slices.DeleteFunc(h.events[ev.Key], func(e event) bool { return e.UID == ev.UID })
	h.publish("keventgone", map[string]string{"uid": ev.UID, "key": ev.Key})
}

// problem records (or with "" clears) what a watch could not read, so the
// page can say so instead of showing an empty view as if it were complete.
func (h *hub) problem(source, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.problems[source] == text {
		return
	}
	if text == "" {
		delete(h.problems, source)
	} else {
		h.problems[source] = text
	}
	h.publish("problem", map[string]string{"source": source, "message": text})
}
