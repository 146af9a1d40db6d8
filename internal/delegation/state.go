/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package delegation holds every decision the operator makes about a
// Delegation, as pure functions of what was observed: spec, status, parent,
// agent, the last remote task and the time. No client, clock or network here.
package delegation

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Outcome reasons written to status.outcome.reason and used as Event reasons.
const (
	ReasonParentNotFound = "ParentNotFound"
	ReasonWaitingParent  = "WaitingForParent"
	ReasonAgentNotFound  = "AgentNotFound"
	ReasonAgentNotReady  = "AgentNotReady"
	// ReasonAgentNotGranted: the Agent is in another namespace whose
	// AgentGrants do not admit this one; nothing is sent.
	ReasonAgentNotGranted = "AgentNotGranted"
	ReasonBudgetExhausted = "BudgetExhausted"
	ReasonInvalidTree     = "InvalidTree"
	ReasonSending         = "Sending"
	// ReasonAgentBusy: the call waits for room in the Agent's call pool.
	ReasonAgentBusy = "AgentBusy"
	// ReasonAgentAtCapacity: the Agent runs spec.maxConcurrentTasks tasks.
	ReasonAgentAtCapacity = "AgentAtCapacity"
	// ReasonQuotaExceeded: starting would exceed a DelegationQuota of the
	// namespace; it waits, never fails, for it.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonChildrenPerParentExceeded: the parent has as many started
	// children as a DelegationQuota's hard.childrenPerParent; it waits, in
	// creation order among its siblings, for a started one to be deleted,
	// and holds no place in the namespace's inFlight line meanwhile.
	ReasonChildrenPerParentExceeded = "ChildrenPerParentExceeded"
	// ReasonOverQuotaLimit: the Delegation asks more than a DelegationQuota
	// allows any one Delegation (spec.hard.maxBudget, maxAttempts), or is
	// deeper than its hard.depth; it waits until the quota is raised or it
	// asks less, and holds no place in the quota's queue.
	ReasonOverQuotaLimit = "OverQuotaLimit"
	// ReasonAwaitingApproval: a DelegationQuota's approval threshold is
	// crossed and no DelegationApproval has decided yet; nothing is sent.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonDenied: a DelegationApproval denied the Delegation (Failed).
	ReasonDenied = "Denied"
	// ReasonSelfApprovalIgnored is the Event reason when an approval by
	// the Delegation's requester does not count.
	ReasonSelfApprovalIgnored = "SelfApprovalIgnored"
	// ReasonApproved is the Event reason when an approval lets one go.
	ReasonApproved        = "Approved"
	ReasonSent            = "Sent"
	ReasonAdopted         = "Adopted"
	ReasonWorking         = "Working"
	ReasonWaitingChildren = "WaitingForChildren"
	ReasonInputRequired   = "InputRequired"
	ReasonAuthRequired    = "AuthRequired"
	ReasonCompleted       = "Completed"
	ReasonRemoteFailed    = "RemoteFailed"
	ReasonRemoteRejected  = "RemoteRejected"
	ReasonSendRefused     = "SendRefused"
	ReasonUnreachable     = "Unreachable"
	ReasonTaskLost        = "TaskLost"
	ReasonDeadline        = "DeadlineExceeded"
	ReasonChildFailed     = "ChildFailed"
	ReasonChildCanceled   = "ChildCanceled"
	ReasonDetached        = "Detached"

	// Cancel reasons (phase Canceled).
	ReasonRequested     = "Requested"
	ReasonParentDeleted = "ParentDeleted"
	ReasonParentEnded   = "ParentEnded"
	ReasonParentExpired = "ParentExpired"
	ReasonRemote        = "Remote"
)

// Parent is what a child needs to know of its parent.
type Parent struct {
	Found    bool
	Deleting bool
	// Owns is true when the parent is this child's controller owner (same
	// UID): a child it owns goes with it; one it does not own waits.
	Owns     bool
	Phase    v1alpha1.Phase
	Deadline time.Time // zero: none
}

// Agent is what a Delegation needs to know of its Agent.
type Agent struct {
	// NotGranted: the Agent is in another namespace and no AgentGrant there
	// admits the Delegation's; nothing else of it was read.
	NotGranted bool
	Found      bool
	Ready      bool
	// CanList: the agent lists tasks for the operator, so a lost send's
	// task can be looked up.
	CanList bool
}

// Observation is everything one decision is made from.
type Observation struct {
	Now    time.Time
	Spec   *v1alpha1.DelegationSpec
	Status *v1alpha1.DelegationStatus
	// Parent is nil when the Delegation has no parentRef.
	Parent *Parent
	Agent  Agent
	// TreeError is set when the parentRef chain has a cycle or is too deep.
	TreeError string
	// Children counts settled and active children (groups settle on them).
	Children v1alpha1.ChildCounts
	// Retry is the retry policy in force (RetryPolicy); nil: none.
	Retry *v1alpha1.RetryPolicy
	// SendOnItsWay: a send or look-up of this Delegation is queued, running
	// or holds an answer not applied yet; that answer decides, not the clock.
	SendOnItsWay bool
	// LeaseRenewed is when the agent last answered for the followed task
	// (a renewal, or the send); zero when not known.
	LeaseRenewed time.Time
}

// Settled phases are terminal: nothing moves the Delegation out of them.
func Settled(p v1alpha1.Phase) bool { return p.Settled() }

// Interrupted phases are handed back to a person: only explicit requests
// (cancel, deletion, a cancelled parent) cancel them, never a timer.
func Interrupted(p v1alpha1.Phase) bool {
	return p == v1alpha1.PhaseInputRequired || p == v1alpha1.PhaseAuthRequired
}

// parentActive says whether children of a parent in this phase may start.
func parentActive(p v1alpha1.Phase) bool {
	return p == v1alpha1.PhaseRunning || Interrupted(p)
}

// IsGroup reports whether the Delegation only holds children.
func IsGroup(spec *v1alpha1.DelegationSpec) bool { return spec.AgentRef == nil }

// Started reports whether a remote task exists or may exist.
func Started(st *v1alpha1.DelegationStatus) bool { return st.TaskID != "" || st.SendStarted != nil }

// ParentChanged reports whether a parent changed in a way its children act
// on: it is being deleted, its phase, deadline or budget moved. Everything
// else (a child's counts, a renewal) leaves the children alone, so N
// children do not cost N² reconciles.
func ParentChanged(old, cur *v1alpha1.Delegation) bool {
	return old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
		old.Status.Phase != cur.Status.Phase ||
		!old.Status.Deadline.Equal(cur.Status.Deadline) ||
		!equality.Semantic.DeepEqual(budgetView(old.Status.Budget), budgetView(cur.Status.Budget))
}

// budgetView is what children read of a parent's ledger: what it grants and
// what is left for them to reserve.
func budgetView(b *v1alpha1.BudgetStatus) [2]v1alpha1.Meters {
	if b == nil {
		return [2]v1alpha1.Meters{}
	}
	return [2]v1alpha1.Meters{b.Granted, b.Left}
}

// ChildChanged reports whether a child changed in a way its parent counts.
func ChildChanged(old, cur *v1alpha1.Delegation) bool {
	return old.Status.Phase != cur.Status.Phase || old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}
