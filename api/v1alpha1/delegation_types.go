/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizer holds a Delegation until its remote task was cancelled (or the
// cancel bound passed).
const Finalizer = "delegation.tether.dev/cancel"

// AnnotationSendStarted records (RFC 3339) that the first message may have
// reached the agent. The operator writes it together with the finalizer, in
// one optimistic-locked patch, before it sends; after a restart it looks
// the task up instead of sending twice. status.sendStarted mirrors it.
const AnnotationSendStarted = "delegation.tether.dev/send-started"

// AnnotationSendDeadline records (RFC 3339) the first send's deadline
// beside its marker, in the same write (see status.sendDeadline).
const AnnotationSendDeadline = "delegation.tether.dev/send-deadline"

// LocalRef names an object in the same namespace.
type LocalRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AgentRef names the Agent a task goes to: in the Delegation's namespace,
// or in another namespace whose AgentGrant admits the Delegation's.
type AgentRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// namespace of the Agent when it is not the Delegation's own. Nothing is
	// sent until an AgentGrant in that namespace admits this one
	// (Pending, reason AgentNotGranted).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// AgentKey is the namespace and name of the Agent the Delegation names,
// false for a group.
func (d *Delegation) AgentKey() (types.NamespacedName, bool) {
	ref := d.Spec.AgentRef
	if ref == nil {
		return types.NamespacedName{}, false
	}
	ns := ref.Namespace
	if ns == "" {
		ns = d.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}, true
}

// SharedAgent reports an agentRef to another namespace's Agent.
func (d *Delegation) SharedAgent() bool {
	key, ok := d.AgentKey()
	return ok && key.Namespace != d.Namespace
}

// Part is one piece of a message: exactly one of text, url or data.
// +kubebuilder:validation:XValidation:rule="(has(self.text) ? 1 : 0) + (has(self.url) ? 1 : 0) + (has(self.data) ? 1 : 0) == 1",message="a part holds exactly one of text, url or data"
type Part struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Text string `json:"text,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	URL string `json:"url,omitempty"`
	// data is structured content: a JSON object. It is typed as an object
	// (rather than left schemaless) so that admission rules can see whether
	// it is set; a null is dropped and the part then holds nothing.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Data *runtime.RawExtension `json:"data,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	MediaType string `json:"mediaType,omitempty"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Filename string `json:"filename,omitempty"`
}

// Message is what is sent to the agent.
// +kubebuilder:validation:XValidation:rule="has(self.text) || (has(self.parts) && size(self.parts) > 0)",message="message needs text or at least one part"
type Message struct {
	// text is sent as the first text part.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Text string `json:"text,omitempty"`
	// parts follow the text.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Parts []Part `json:"parts,omitempty"`
	// contextID groups related tasks at the agent; derived from the UID when empty.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	ContextID string `json:"contextID,omitempty"`
	// metadata is sent as message metadata. Keys under https://tether.dev/
	// are reserved for the operator (it writes the delegation identity there).
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 256)",message="metadata keys must be 1 to 256 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 4096)",message="metadata values must be at most 4096 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('https://tether.dev/'))",message="metadata keys under https://tether.dev/ are reserved for the operator"
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Reply answers a task that asked for input: text and/or parts, message
// metadata, and the A2A extensions to activate for the call that sends it (an
// agent asking for approval through an extension reads its data under the
// extension's URI, in metadata or a data part).
// +kubebuilder:validation:XValidation:rule="has(self.text) || (has(self.parts) && size(self.parts) > 0)",message="a reply needs text or at least one part"
type Reply struct {
	// text is sent as the first text part.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Text string `json:"text,omitempty"`
	// parts follow the text.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Parts []Part `json:"parts,omitempty"`
	// metadata is sent as message metadata; values are any JSON. Keys under
	// https://tether.dev/ are reserved for the operator: it never sends them
	// with a reply (CEL cannot see into a map of untyped JSON values, so the
	// operator, not admission, holds this rule).
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	Metadata map[string]apiextensionsv1.JSON `json:"metadata,omitempty"`
	// extensions are the URIs of A2A extensions activated for this call
	// (the A2A-Extensions header; X-A2A-Extensions for 0.3 agents).
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s,]+$`
	// +optional
	Extensions []string `json:"extensions,omitempty"`
}

// LeaseSpec asks the agent to hold the task only while the operator renews it.
type LeaseSpec struct {
	// ttl is how long the task lives without a renewal. Renewed every ttl/3.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="lease.ttl must be between 1s and 1h"
	TTL metav1.Duration `json:"ttl"`
}

// BudgetSpec bounds what a task (and everything under it) may spend.
// +kubebuilder:validation:XValidation:rule="!(has(self.timeout) && has(self.deadline))",message="budget.timeout and budget.deadline are mutually exclusive"
type BudgetSpec struct {
	// meters are named quantities, e.g. tokens: 20000. A name is 1 to 63
	// letters, digits, '-', '_' or '.', starting and ending with a letter or
	// digit. A child of a parent that meters something is granted only the
	// parent's meters: the others are ignored (an Event says which).
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && k.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))",message="budget meter names must be 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k] >= 0)",message="budget meters must not be negative"
	// +optional
	Meters map[string]int64 `json:"meters,omitempty"`
	// timeout is the budget's wall-clock allowance from start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="budget.timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// deadline is an absolute end for the budget.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
}

// ParentClosePolicy says what happens to a child when its parent ends.
// +kubebuilder:validation:Enum=Cancel;Detach
// +kubebuilder:validation:MaxLength=16
type ParentClosePolicy string

const (
	// ParentClosePolicyCancel cancels the child with its parent.
	ParentClosePolicyCancel ParentClosePolicy = "Cancel"
	// ParentClosePolicyDetach leaves the child running.
	ParentClosePolicyDetach ParentClosePolicy = "Detach"
)

// DelegationSpec is one task for a remote agent, or a group of child tasks.
// +kubebuilder:validation:XValidation:rule="has(self.agentRef) || (!has(self.message) && !has(self.taskID) && !has(self.lease) && !has(self.replies) && !has(self.skill))",message="a group (no agentRef) cannot have message, taskID, lease, replies or skill"
// +kubebuilder:validation:XValidation:rule="!has(self.agentRef) || has(self.message) || has(self.taskID)",message="a Delegation with agentRef needs a message, or a taskID to adopt"
// +kubebuilder:validation:XValidation:rule="!(has(self.cancel) && self.cancel && has(self.detach) && self.detach)",message="cancel and detach are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.parentRef) == has(oldSelf.parentRef) && (!has(self.parentRef) || self.parentRef.name == oldSelf.parentRef.name)",message="parentRef is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.agentRef) == has(oldSelf.agentRef) && (!has(self.agentRef) || self.agentRef == oldSelf.agentRef)",message="agentRef is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.message) || (has(self.message) && self.message == oldSelf.message)",message="message is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.taskID) || (has(self.taskID) && self.taskID == oldSelf.taskID)",message="taskID is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.replies) || (has(self.replies) && size(self.replies) >= size(oldSelf.replies) && self.replies.slice(0, size(oldSelf.replies)) == oldSelf.replies)",message="replies can only be appended"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)",message="cancel cannot be undone"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.detach) || !oldSelf.detach || (has(self.detach) && self.detach)",message="detach cannot be undone"
type DelegationSpec struct {
	// agentRef names the Agent that runs the task. Without it the Delegation is
	// a group: it sends nothing and settles when its children settle.
	// +optional
	AgentRef *AgentRef `json:"agentRef,omitempty"`
	// skill asks for one of the agent's skills.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Skill string `json:"skill,omitempty"`
	// parentRef names the parent Delegation; the operator sets the ownerReference.
	// +optional
	ParentRef *LocalRef `json:"parentRef,omitempty"`
	// message is sent once to start the task.
	// +optional
	Message *Message `json:"message,omitempty"`
	// replies continue a task that asked for input; each is sent once, in order.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Replies []Reply `json:"replies,omitempty"`
	// tenant overrides the Agent's tenant.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// lease makes the agent drop the task when the operator stops renewing it.
	// +optional
	Lease *LeaseSpec `json:"lease,omitempty"`
	// budget is granted to the task and reserved from the parent's budget.
	// +optional
	Budget *BudgetSpec `json:"budget,omitempty"`
	// timeout is the wall-clock limit from start; past it the task is cancelled
	// and the Delegation fails with class BudgetExhausted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// parentClosePolicy says what happens to this task when its parent ends.
	// +kubebuilder:default=Cancel
	// +optional
	ParentClosePolicy ParentClosePolicy `json:"parentClosePolicy,omitempty"`
	// cancel cancels the task without deleting the object.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
	// detach stops following the task without cancelling it; the task id is kept.
	// +optional
	Detach bool `json:"detach,omitempty"`
	// taskID adopts an existing remote task instead of sending a message.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// retry makes a failed task a new attempt, as often as maxAttempts
	// allows. Without it a failure is final, unless a group above sets
	// one: a task inherits the policy of the nearest group up its chain of
	// groups (a task's own policy is not inherited by its children).
	// +optional
	Retry *RetryPolicy `json:"retry,omitempty"`
	// ttlSecondsAfterFinished deletes the object this long after it settles.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Delegation is one task sent to a remote agent over A2A, or a group of them.
// Once the task started (status.startTime, status.sendStarted or status.taskID
// set), spec.tenant, lease, parentClosePolicy and skill are fixed and a taskID
// can no longer be added; spec.budget and spec.timeout are fixed from then on,
// and from the grant (status.budget) on; spec.retry is fixed once it started.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dlg,categories=tether
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentRef.name`
// +kubebuilder:printcolumn:name="Agent Namespace",type=string,JSONPath=`.spec.agentRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Task",type=string,JSONPath=`.status.taskID`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.parentRef) || self.spec.parentRef.name != self.metadata.name",message="spec.parentRef cannot name the Delegation itself"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || (!has(oldSelf.status.startTime) && !has(oldSelf.status.sendStarted) && !has(oldSelf.status.taskID)) || (has(self.spec.tenant) == has(oldSelf.spec.tenant) && (!has(self.spec.tenant) || self.spec.tenant == oldSelf.spec.tenant) && has(self.spec.skill) == has(oldSelf.spec.skill) && (!has(self.spec.skill) || self.spec.skill == oldSelf.spec.skill) && has(self.spec.parentClosePolicy) == has(oldSelf.spec.parentClosePolicy) && (!has(self.spec.parentClosePolicy) || self.spec.parentClosePolicy == oldSelf.spec.parentClosePolicy) && has(self.spec.lease) == has(oldSelf.spec.lease) && (!has(self.spec.lease) || self.spec.lease.ttl == oldSelf.spec.lease.ttl))",message="spec.tenant, spec.lease, spec.parentClosePolicy and spec.skill are immutable once the task started"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || (!has(oldSelf.status.sendStarted) && !has(oldSelf.status.taskID)) || has(oldSelf.spec.taskID) || !has(self.spec.taskID)",message="spec.taskID cannot be added once the message was sent"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || (!has(oldSelf.status.startTime) && !has(oldSelf.status.sendStarted) && !has(oldSelf.status.taskID) && !has(oldSelf.status.budget)) || (has(self.spec.budget) == has(oldSelf.spec.budget) && (!has(self.spec.budget) || self.spec.budget == oldSelf.spec.budget) && has(self.spec.timeout) == has(oldSelf.spec.timeout) && (!has(self.spec.timeout) || self.spec.timeout == oldSelf.spec.timeout))",message="spec.budget and spec.timeout are immutable once the budget was granted or the task started"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || (!has(oldSelf.status.startTime) && !has(oldSelf.status.sendStarted) && !has(oldSelf.status.taskID)) || (has(self.spec.retry) == has(oldSelf.spec.retry) && (!has(self.spec.retry) || self.spec.retry == oldSelf.spec.retry))",message="spec.retry is immutable once the task started"
type Delegation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec DelegationSpec `json:"spec"`
	// +optional
	Status DelegationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DelegationList contains a list of Delegation.
type DelegationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Delegation `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Delegation{}, &DelegationList{})
		return nil
	})
}
