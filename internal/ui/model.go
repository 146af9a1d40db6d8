/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ui

import (
	"slices"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegationtree"
)

// node is what the page draws of one Delegation: only what the view shows,
// so the page never holds a spec's message text or metadata.
type node struct {
	Key          string    `json:"key"` // namespace/name
	Namespace    string    `json:"namespace"`
	Name         string    `json:"name"`
	Parent       string    `json:"parent,omitempty"` // the parent's key
	Agent        string    `json:"agent,omitempty"`  // "" for a group
	Skill        string    `json:"skill,omitempty"`
	Phase        string    `json:"phase,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	FailureClass string    `json:"failureClass,omitempty"`
	Attempt      string    `json:"attempt,omitempty"` // "attempt 2/3" under a retry policy
	Message      string    `json:"message,omitempty"` // the agent's (or operator's) status message
	TaskID       string    `json:"taskID,omitempty"`
	RemoteState  string    `json:"remoteState,omitempty"`
	Created      time.Time `json:"created"`
	Started      *string   `json:"started,omitempty"`
	Completed    *string   `json:"completed,omitempty"`
	Deadline     *string   `json:"deadline,omitempty"`
	Lease        *lease    `json:"lease,omitempty"`
	Budget       []meter   `json:"budget,omitempty"`
	Children     *counts   `json:"children,omitempty"`
	Replies      [2]int    `json:"replies"` // sent, total
	Cancel       bool      `json:"cancel,omitempty"`
	Detach       bool      `json:"detach,omitempty"`
	Deleting     bool      `json:"deleting,omitempty"`
}

type lease struct {
	TTLSeconds   float64 `json:"ttlSeconds"`
	Granted      bool    `json:"granted"`
	GrantedUntil *string `json:"grantedUntil,omitempty"`
	Reason       string  `json:"reason,omitempty"`
}

// meter is one line of the budget ledger: granted = spent + reserved + left.
type meter struct {
	Name     string `json:"name"`
	Granted  int64  `json:"granted"`
	Reserved int64  `json:"reserved"`
	Spent    int64  `json:"spent"`
	Left     int64  `json:"left"`
}

type counts struct {
	Active    int32 `json:"active"`
	Succeeded int32 `json:"succeeded"`
	Failed    int32 `json:"failed"`
	Canceled  int32 `json:"canceled"`
}

// event is one Event recorded for a Delegation.
type event struct {
	UID      string    `json:"uid"`
	Key      string    `json:"key"` // the Delegation's key
	Type     string    `json:"type"`
	Reason   string    `json:"reason"`
	Note     string    `json:"note"`
	Count    int32     `json:"count"`
	LastSeen time.Time `json:"lastSeen"`
	Reporter string    `json:"reporter,omitempty"`
}

func stamp(t *metav1.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func nodeOf(d *v1alpha1.Delegation) node {
	n := node{
		Key:       delegationtree.Key(d.Namespace, d.Name),
		Namespace: d.Namespace,
		Name:      d.Name,
		Skill:     d.Spec.Skill,
		Phase:     string(d.Status.Phase),
		TaskID:    d.Status.TaskID,
		Created:   d.CreationTimestamp.UTC(),
		Started:   stamp(d.Status.StartTime),
		Completed: stamp(d.Status.CompletionTime),
		Deadline:  stamp(d.Status.Deadline),
		Attempt:   delegationtree.Attempt(d),
		Replies:   [2]int{int(d.Status.RepliesSent), len(d.Spec.Replies)},
		Cancel:    d.Spec.Cancel,
		Detach:    d.Spec.Detach,
		Deleting:  d.DeletionTimestamp != nil,

		RemoteState: d.Status.RemoteState,
	}
	if p := delegationtree.ParentName(d); p != "" {
		n.Parent = delegationtree.Key(d.Namespace, p)
	}
	if key, ok := d.AgentKey(); ok {
		n.Agent = key.Name
		if d.SharedAgent() {
			n.Agent = key.String()
		}
	}
	if o := d.Status.Outcome; o != nil {
		n.Reason, n.FailureClass, n.Message = o.Reason, string(o.FailureClass), o.Message
	}
	if l := d.Status.Lease; l != nil {
		n.Lease = &lease{Granted: l.Granted, GrantedUntil: stamp(l.GrantedUntil), Reason: l.Reason}
		if l.TTL != nil {
			n.Lease.TTLSeconds = l.TTL.Seconds()
		}
	} else if d.Spec.Lease != nil {
		n.Lease = &lease{TTLSeconds: d.Spec.Lease.TTL.Seconds()}
	}
	if b := d.Status.Budget; b != nil {
		n.Budget = meters(b)
	}
	if c := d.Status.Children; c != nil {
		n.Children = &counts{Active: c.Active, Succeeded: c.Succeeded, Failed: c.Failed, Canceled: c.Canceled}
	}
	return n
}

// meters lists the ledger by meter name, every meter any column names.
func meters(b *v1alpha1.BudgetStatus) []meter {
	var names []string
	for _, m := range []v1alpha1.Meters{b.Granted, b.Reserved, b.Spent, b.Left} {
		for name := range m {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	out := make([]meter, 0, len(names))
	for _, name := range names {
		out = append(out, meter{Name: name, Granted: b.Granted[name], Reserved: b.Reserved[name],
			Spent: b.Spent[name], Left: b.Left[name]})
	}
	return out
}

// eventOf reads an Event about a Delegation; ok is false for any other Event.
func eventOf(ev *eventsv1.Event) (event, bool) {
	if !delegationtree.IsAbout(ev) {
		return event{}, false
	}
	r := ev.Regarding
	out := event{UID: string(ev.UID), Key: delegationtree.Key(r.Namespace, r.Name), Type: ev.Type,
		Reason: ev.Reason, Note: ev.Note, Count: 1, LastSeen: delegationtree.EventTime(ev).UTC(), Reporter: ev.ReportingController}
	if ev.Series != nil {
		out.Count = ev.Series.Count
	}
	return out, true
}
