/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package delegationtree says which Delegation is whose parent: the one rule
// the kubectl plugin's tree, its graph outputs and its web view all draw by.
package delegationtree

import (
	"fmt"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// kindDelegation is the kind of a parent in an ownerReference.
const kindDelegation = "Delegation"

// ParentName is the name of d's parent: spec.parentRef, or failing that a
// Delegation ownerReference (objects created by tools that set the owner
// directly), preferring the controller reference.
func ParentName(d *v1alpha1.Delegation) string {
	if d.Spec.ParentRef != nil {
		return d.Spec.ParentRef.Name
	}
	name := ""
	for _, ref := range d.OwnerReferences {
		if ref.Kind != kindDelegation || !strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			continue
		}
		if ref.Controller != nil && *ref.Controller {
			return ref.Name
		}
		if name == "" {
			name = ref.Name
		}
	}
	return name
}

// Key names a Delegation across namespaces: namespace/name (a parent is
// always in its child's namespace).
func Key(namespace, name string) string { return namespace + "/" + name }

// EventTime is when an Event about a Delegation last happened: its series'
// last observation, its eventTime, or for Events written through the core
// API their timestamps. Listings of a tree's Events sort by it.
func EventTime(ev *eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	default:
		return ev.CreationTimestamp.Time
	}
}

// IsAbout says whether an Event is about a Delegation (the operator records
// them with the Delegation as the regarding object).
func IsAbout(ev *eventsv1.Event) bool {
	r := ev.Regarding
	return r.Kind == kindDelegation && r.APIVersion == v1alpha1.GroupVersion.String()
}

// Attempt is "attempt 2/3" under a retry policy of more than one attempt,
// "" otherwise: what the tree, describe and the web view show.
func Attempt(d *v1alpha1.Delegation) string {
	if st := &d.Status; st.Attempt > 0 && st.MaxAttempts > 1 {
		return fmt.Sprintf("attempt %d/%d", st.Attempt, st.MaxAttempts)
	}
	return ""
}
