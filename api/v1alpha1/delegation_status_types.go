/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SendResult is what became of a send whose answer was not recorded.
// +kubebuilder:validation:Enum=InFlight;NotSent;Unknown
type SendResult string

const (
	// SendInFlight: the send is being made (or the operator stopped while making it).
	SendInFlight SendResult = "InFlight"
	// SendNotSent: the request never left the operator (a dial error, or no
	// client could be built: a header Secret missing).
	SendNotSent SendResult = "NotSent"
	// SendUnknown: the request may have reached the agent; its answer was lost.
	SendUnknown SendResult = "Unknown"
)

// Phase is where a Delegation is in its life.
// +kubebuilder:validation:Enum=Pending;Running;InputRequired;AuthRequired;Succeeded;Failed;Canceled;Detached
type Phase string

const (
	PhasePending       Phase = "Pending"
	PhaseRunning       Phase = "Running"
	PhaseInputRequired Phase = "InputRequired"
	PhaseAuthRequired  Phase = "AuthRequired"
	PhaseSucceeded     Phase = "Succeeded"
	PhaseFailed        Phase = "Failed"
	PhaseCanceled      Phase = "Canceled"
	PhaseDetached      Phase = "Detached"
)

// FailureClass says why a task failed, for retries and for people.
type FailureClass string

const (
	FailureInvalidRequest  FailureClass = "InvalidRequest"
	FailureTransient       FailureClass = "Transient"
	FailurePolicyRefusal   FailureClass = "PolicyRefusal"
	FailureBudgetExhausted FailureClass = "BudgetExhausted"
	FailureInternal        FailureClass = "Internal"
	FailureUnreachable     FailureClass = "Unreachable"
	FailureRejected        FailureClass = "Rejected"
	// FailureLeaseLapsed: the agent did not answer a renewal for a whole
	// ttl, so the lease lapsed; the operator cancelled the task.
	FailureLeaseLapsed FailureClass = "LeaseLapsed"
)

// Outcome explains the phase.
type Outcome struct {
	// reason is a CamelCase word, e.g. Completed, Requested, ParentDeleted.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
	// failureClass is set when the phase is Failed.
	// +optional
	FailureClass FailureClass `json:"failureClass,omitempty"`
	// message is for people.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
}

// Artifact is one output of the task, bounded in size.
type Artifact struct {
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	MediaType string `json:"mediaType,omitempty"`
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Text string `json:"text,omitempty"`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`
}

// Result is what the task produced, bounded in size.
type Result struct {
	// +optional
	Text string `json:"text,omitempty"`
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// truncated is true when text or artifacts were cut to fit.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// LeaseStatus is the lease the agent granted.
type LeaseStatus struct {
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
	// granted is true when the agent answered with an expiry.
	Granted bool `json:"granted"`
	// grantedUntil is the expiry the agent first granted; renewals extend it
	// without writing status.
	// +optional
	GrantedUntil *metav1.Time `json:"grantedUntil,omitempty"`
	// reason explains granted=false.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// lapsedAt is when the operator saw the lease lapse (no answer from the
	// agent for a whole ttl) under a retry policy that retries LeaseLapsed:
	// the task is cancelled before anything else happens.
	// +optional
	LapsedAt *metav1.Time `json:"lapsedAt,omitempty"`
}

// Meters are named quantities. In status they hold the meters of a grant
// (at most 16, from a spec) or of an agent's report (at most 32 are read).
// +kubebuilder:validation:MaxProperties=32
type Meters map[string]int64

// MaxReservations bounds status.budget.reservations: one entry per active
// child, so a wide tree's parent stays well below etcd's object size. A
// child finding the ledger full waits, Pending, until a sibling settles.
const MaxReservations = 500

// Reservation is what one active child holds of its parent's budget.
type Reservation struct {
	// child is the child Delegation's name.
	// +kubebuilder:validation:MaxLength=253
	Child string `json:"child"`
	// uid of the child, so a recreated child never reuses an entry.
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`
	// +optional
	Meters Meters `json:"meters,omitempty"`
}

// BudgetStatus is the ledger: granted = spent + reserved + left, where
// spent = reported (by the task's own agent) + charged (by settled children).
type BudgetStatus struct {
	// granted is this task's budget: its own meters, and 0 for each meter of
	// the parent's that it does not name.
	// +optional
	Granted Meters `json:"granted,omitempty"`
	// reserved is held by active children.
	// +optional
	Reserved Meters `json:"reserved,omitempty"`
	// reported is the spend the task's own agent last reported (at most 32
	// meters are read from a report).
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Reported Meters `json:"reported,omitempty"`
	// charged is what settled children were charged.
	// +optional
	Charged Meters `json:"charged,omitempty"`
	// endedAttempts is what the task's ended attempts counted (the sum of
	// status.attempts[].spent); reported is then the current attempt's.
	// +optional
	EndedAttempts Meters `json:"endedAttempts,omitempty"`
	// spent is reported + charged + endedAttempts.
	// +optional
	Spent Meters `json:"spent,omitempty"`
	// +optional
	Left Meters `json:"left,omitempty"`
	// reservations holds one entry per active child (at most 500).
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=500
	// +optional
	Reservations []Reservation `json:"reservations,omitempty"`
}

// ChildCounts counts the Delegations whose parentRef names this one.
type ChildCounts struct {
	Active    int32 `json:"active"`
	Succeeded int32 `json:"succeeded"`
	Failed    int32 `json:"failed"`
	Canceled  int32 `json:"canceled"`
}

// SettledChild is the outcome a group keeps of one settled child.
type SettledChild struct {
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name  string `json:"name,omitempty"`
	Phase Phase  `json:"phase"`
}

// DelegationStatus is what the operator observed.
type DelegationStatus struct {
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// taskID is the remote task id. An agent answering a longer one gets an
	// InvalidAgentResponse error instead.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// contextID is the remote context id.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContextID string `json:"contextID,omitempty"`
	// remoteState is the task state the agent last reported.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RemoteState string `json:"remoteState,omitempty"`
	// sendStarted records that a send was in flight, so a restarted operator
	// looks the task up instead of sending twice.
	// +optional
	SendStarted *metav1.Time `json:"sendStarted,omitempty"`
	// sendDeadline is when no request of the latest send can still be on
	// its way: a send that has not left by then never leaves, and one that
	// left ends by then. A look-up that finds no task proves the send
	// never started only after it (plus the agent's listing lag), whichever
	// process made the send.
	// +optional
	SendDeadline *metav1.Time `json:"sendDeadline,omitempty"`
	// sendResult says what became of a send that has no task id yet:
	// InFlight (made, or about to be made, when status was last written),
	// NotSent (it provably never left the operator, so it may be made again)
	// or Unknown (it may have reached the agent and the answer was lost: the
	// task is looked up, never sent again).
	// +optional
	SendResult SendResult `json:"sendResult,omitempty"`
	// replyInFlight is true while spec.replies[repliesSent-1] is claimed but
	// its delivery is not confirmed: the task is read before any re-send.
	// +optional
	ReplyInFlight bool `json:"replyInFlight,omitempty"`
	// cancelRequested is when the operator first asked the agent to cancel;
	// cancel retries stop at --cancel-timeout after it.
	// +optional
	CancelRequested *metav1.Time `json:"cancelRequested,omitempty"`
	// +optional
	Outcome *Outcome `json:"outcome,omitempty"`
	// +optional
	Result *Result `json:"result,omitempty"`
	// +optional
	Lease *LeaseStatus `json:"lease,omitempty"`
	// +optional
	Budget *BudgetStatus `json:"budget,omitempty"`
	// +optional
	Children *ChildCounts `json:"children,omitempty"`
	// settledChildren is what a group keeps of each child that settled,
	// written in the same update as the child's charge, so a child deleted
	// afterwards (ttlSecondsAfterFinished) still counts in the group's
	// outcome. Bounded: when full, a succeeded child's entry makes room for
	// a child that did not succeed.
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	SettledChildren []SettledChild `json:"settledChildren,omitempty"`
	// attempt is the number of the current attempt under a retry policy
	// (from 1); unset without one.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// maxAttempts is the retry policy's maxAttempts, fixed when the task
	// started; unset without a policy.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
	// attempts lists the attempts that ended, oldest first (at most
	// maxAttempts).
	// +listType=map
	// +listMapKey=attempt
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Attempts []Attempt `json:"attempts,omitempty"`
	// repliesSent counts spec.replies already delivered.
	// +optional
	RepliesSent int32 `json:"repliesSent,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// deadline is the earliest of the own timeout, the budget's and the parent's
	// deadline, fixed when the task starts.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions follow kstatus: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
