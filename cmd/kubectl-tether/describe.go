/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/delegationtree"
)

// renderDescribe prints what a person asks first about a Delegation: where it
// is, why, what holds it (lease) and what it may still spend (the ledger).
func renderDescribe(d *v1alpha1.Delegation, now time.Time, color bool) string {
	var b strings.Builder
	// Values can come from agents: escape control characters (the phase is ours).
	field := func(name, value string) { b.WriteString(fieldLine(name, escapeLine(value))) }

	field("Name", d.Name)
	field("Namespace", d.Namespace)
	agent := agentOf(d)
	if d.Spec.AgentRef != nil && d.Spec.Skill != "" {
		agent += " (skill " + d.Spec.Skill + ")"
	}
	field("Agent", agent)
	field("Parent", orNone(parentName(d)))
	b.WriteString(fieldLine("Phase", paint(phaseOf(d), phaseColors[d.Status.Phase], color)))
	if o := d.Status.Outcome; o != nil {
		field("Reason", orNone(o.Reason))
		if o.FailureClass != "" {
			field("Failure class", string(o.FailureClass))
		}
		if o.Message != "" {
			field("Message", o.Message)
		}
	}
	if a := delegationtree.Attempt(d); a != "" {
		field("Attempt", a)
	}
	field("Task", orNone(d.Status.TaskID))
	if d.Status.RemoteState != "" {
		field("Remote state", d.Status.RemoteState)
	}
	field("Started", timestamp(d.Status.StartTime, now))
	if d.Status.Deadline != nil {
		field("Deadline", timestamp(d.Status.Deadline, now))
	}
	if d.Status.CompletionTime != nil {
		field("Completed", timestamp(d.Status.CompletionTime, now))
	}
	if len(d.Spec.Replies) > 0 {
		field("Replies", fmt.Sprintf("%d of %d sent", d.Status.RepliesSent, len(d.Spec.Replies)))
	}
	if c := d.Status.Children; c != nil {
		field("Children", fmt.Sprintf("%d active, %d succeeded, %d failed, %d canceled",
			c.Active, c.Succeeded, c.Failed, c.Canceled))
	}
	b.WriteString(describeAttempts(d.Status.Attempts, now))
	b.WriteString(describeLease(d, now))
	b.WriteString(describeBudget(d.Status.Budget))
	return b.String()
}

// describeAttempts lists the attempts that ended, oldest first.
func describeAttempts(attempts []v1alpha1.Attempt, now time.Time) string {
	if len(attempts) == 0 {
		return ""
	}
	rows := [][]string{{"ATTEMPT", "TASK", "STARTED", "ENDED", colReason, "CLASS", "SPENT"}}
	for _, a := range attempts {
		reason, class := none, none
		if o := a.Outcome; o != nil {
			reason, class = orNone(o.Reason), orNone(string(o.FailureClass))
		}
		rows = append(rows, []string{itoa(int64(a.Attempt)), escapeLine(orNone(a.TaskID)), timestamp(a.StartTime, now),
			timestamp(a.CompletionTime, now), escapeLine(reason), escapeLine(class), escapeLine(orNone(formatMeters(a.Spent)))})
	}
	return "Attempts:\n" + indent(renderTable(rows))
}

func describeLease(d *v1alpha1.Delegation, now time.Time) string {
	l := d.Status.Lease
	if l == nil {
		if d.Spec.Lease == nil {
			return fieldLine("Lease", "none")
		}
		return fieldLine("Lease", "requested "+d.Spec.Lease.TTL.Duration.String()+", no answer yet")
	}
	ttl := none
	if l.TTL != nil {
		ttl = l.TTL.Duration.String()
	}
	lines := fieldLine("TTL", ttl) + fieldLine("Granted", fmt.Sprint(l.Granted)) +
		fieldLine("Granted until", timestamp(l.GrantedUntil, now))
	if l.Reason != "" {
		lines += fieldLine("Reason", escapeLine(l.Reason))
	}
	return "Lease:\n" + indent(lines)
}

// describeBudget prints the ledger (granted = spent + reserved + left) and
// which child holds each reservation.
func describeBudget(bs *v1alpha1.BudgetStatus) string {
	if bs == nil {
		return fieldLine("Budget", "none")
	}
	rows := [][]string{{"METER", "GRANTED", "RESERVED", "SPENT", "LEFT"}}
	for _, name := range sortedKeys(bs.Granted, bs.Reserved, bs.Spent, bs.Left) {
		rows = append(rows, []string{escapeLine(name), meter(bs.Granted, name),
			meter(bs.Reserved, name), meter(bs.Spent, name), meter(bs.Left, name)})
	}
	out := "Budget:\n" + indent(renderTable(rows))
	if len(bs.Reservations) == 0 {
		return out
	}
	rows = [][]string{{"CHILD", "RESERVED"}}
	for _, r := range bs.Reservations {
		rows = append(rows, []string{escapeLine(r.Child), escapeLine(formatMeters(r.Meters))})
	}
	return out + "Reservations:\n" + indent(renderTable(rows))
}

// fieldLine is one "Name:  value" line, values aligned as kubectl describe does.
func fieldLine(name, value string) string {
	return fmt.Sprintf("%-16s%s\n", name+":", value)
}

func meter(m v1alpha1.Meters, name string) string {
	if v, ok := m[name]; ok {
		return itoa(v)
	}
	return none
}

func indent(s string) string {
	const prefix = "  "
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// describeAgentCard says whose key signed the card of the Delegation's
// Agent, when the Agent checks card signatures ("" otherwise, or when the
// Agent cannot be read).
func describeAgentCard(a *v1alpha1.Agent) string {
	if a == nil || a.Spec.CardSignature == nil {
		return ""
	}
	value := "not verified"
	if s := a.Status.CardSignature; s != nil {
		value = fmt.Sprintf("signed by key %s (%s)", s.KeyID, s.Algorithm)
	} else if !a.Spec.CardSignature.Required {
		value = "unsigned or not verified (not required)"
	}
	return fieldLine("Agent card", escapeLine(value))
}

// describeAgentConformance shows the Agent's Conformant condition when its
// conformance is checked: conformant, or not and why ("" when the Agent is
// not checked, or cannot be read).
func describeAgentConformance(a *v1alpha1.Agent) string {
	if a == nil {
		return ""
	}
	c := meta.FindStatusCondition(a.Status.Conditions, delegation.ConditionConformant)
	if c == nil {
		return ""
	}
	value := "conformant"
	if c.Status != metav1.ConditionTrue {
		value = "not conformant (" + c.Reason + ")"
		if c.Message != "" {
			value += ": " + c.Message
		}
	}
	return fieldLine("Conformance", escapeLine(value))
}
