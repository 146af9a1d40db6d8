/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// ReasonAdoptionRefused: spec.taskID names a task sent for a Delegation of
// another namespace.
const ReasonAdoptionRefused = "AdoptionRefused"

// idPrefix starts every id the operator derives from a Delegation's UID:
// first message, reply and context ids (MessageID, ContextID).
const idPrefix = "tether-"

// SenderUID is the UID of the Delegation an id derived by MessageID or
// ContextID names; "" when the id is not one (a user's own context id, an
// id some other client chose).
func SenderUID(id string) string {
	rest, ok := strings.CutPrefix(id, idPrefix)
	if !ok {
		return ""
	}
	// A UID, then nothing, a reply's "-reply-<i>" or an attempt's "-<n>".
	uid := rest
	if len(rest) > 36 && rest[36] == '-' {
		uid = rest[:36]
	}
	if !isUID(uid) {
		return ""
	}
	return uid
}

// isUID reports whether s has the shape of a Kubernetes UID (a UUID in its
// canonical form), so "tether-demo" chosen by a user names nobody.
func isUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f', r >= 'A' && r <= 'F':
		default:
			return false
		}
	}
	return true
}

// Adoption decides whether a Delegation (uid) may adopt the task its
// spec.taskID names, as read from the agent: the task's context id and the
// message ids it returned each may name the Delegation they were derived
// from. A task naming a Delegation that is neither this one nor one of its
// namespace (inNamespace reports which UIDs are) was sent for someone else:
// adopting it would let this namespace read its result, cancel it or answer
// it. Refused, the Delegation fails with reason AdoptionRefused; ok is true
// when the adoption may go on.
func Adoption(uid string, t *a2a.Task, inNamespace func(uid string) bool) (step Step, ok bool) {
	if t == nil {
		return Step{}, true
	}
	for _, id := range append([]string{t.ContextID}, t.MessageIDs...) {
		sender := SenderUID(id)
		if sender == "" || strings.EqualFold(sender, uid) || inNamespace(sender) {
			continue
		}
		return failed(StepSettle, v1alpha1.FailurePolicyRefusal, ReasonAdoptionRefused,
			fmt.Sprintf("task %q was sent for another namespace's Delegation (%q names UID %s): it is not adopted", t.ID, id, sender)), false
	}
	return Step{}, true
}
