/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// StepKind is what Gate decides a pass does next; the controller's runStep
// carries out every kind.
type StepKind string

const (
	// StepNone: settled, nothing to do.
	StepNone StepKind = "None"
	// StepWait: stay Pending for the reason given.
	StepWait StepKind = "Wait"
	// StepSettle: move to the terminal phase given without calling the agent.
	StepSettle StepKind = "Settle"
	// StepCancel: cancel the remote task (if any), then settle as given.
	StepCancel StepKind = "Cancel"
	// StepDetach: stop following, keep the task id.
	StepDetach StepKind = "Detach"
	// StepStart: adopt spec.taskID, look up an in-flight send, or send.
	StepStart StepKind = "Start"
	// StepFollow: apply what the task was read back as (AfterRead), or
	// leave it to the scheduler until it is.
	StepFollow StepKind = "Follow"
	// StepGroup: the phase given follows from the children.
	StepGroup StepKind = "Group"
	// StepBackoff: the next attempt waits until At (RetryScheduled).
	StepBackoff StepKind = "Backoff"
)

// Step is one decision of Gate: what to do, and the phase and outcome it
// leads to.
type Step struct {
	Kind    StepKind
	Phase   v1alpha1.Phase
	Outcome v1alpha1.Outcome
	// At is when a StepBackoff ends.
	At time.Time
}

// Record is a phase and outcome to write to status: the one thing the
// controller's setPhase takes.
type Record struct {
	Phase   v1alpha1.Phase
	Outcome v1alpha1.Outcome
}

// Record is the phase and outcome the step leads to.
func (s Step) Record() Record { return Record{Phase: s.Phase, Outcome: s.Outcome} }

// ReadNext is what a task read back leads to.
type ReadNext string

const (
	// ReadGoOn: the task goes on; record the phase it reported.
	ReadGoOn ReadNext = "GoOn"
	// ReadSettle: the task ended; record the terminal phase and its result.
	ReadSettle ReadNext = "Settle"
	// ReadReply: the task asks for input and a reply waits in spec.replies:
	// claim it and send it.
	ReadReply ReadNext = "Reply"
)

// Read is what AfterRead decides from a task read back. For ReadReply the
// phase shown stays as it is until the reply's answer (ReplyAccepted).
type Read struct {
	Next ReadNext
	Record
}

// Progress is a non-terminal record with its reason, for the controller's
// own transitions (sending, sent, adopted, waiting for room).
func Progress(phase v1alpha1.Phase, reason, msg string) Record {
	return Record{Phase: phase, Outcome: v1alpha1.Outcome{Reason: reason, Message: msg}}
}

// NotGranted waits for an AgentGrant that admits the Delegation's namespace
// to the Agent of another namespace it names.
func NotGranted(spec *v1alpha1.DelegationSpec) Step {
	return wait(ReasonAgentNotGranted, fmt.Sprintf("no AgentGrant in namespace %q admits this namespace to Agent %q",
		spec.AgentRef.Namespace, spec.AgentRef.Name))
}

func wait(reason, msg string) Step {
	return Step{Kind: StepWait, Phase: v1alpha1.PhasePending, Outcome: v1alpha1.Outcome{Reason: reason, Message: msg}}
}

func failed(kind StepKind, class v1alpha1.FailureClass, reason, msg string) Step {
	return Step{Kind: kind, Phase: v1alpha1.PhaseFailed, Outcome: v1alpha1.Outcome{Reason: reason, FailureClass: class, Message: msg}}
}

func canceled(reason, msg string) Step {
	return Step{Kind: StepCancel, Phase: v1alpha1.PhaseCanceled, Outcome: v1alpha1.Outcome{Reason: reason, Message: msg}}
}

// Gate decides everything that needs no call to the agent, in order: settled,
// invalid tree, cancel triggers, detach, waiting on parent and agent, start.
func Gate(o Observation) Step {
	st, spec := o.Status, o.Spec
	if Settled(st.Phase) {
		return Step{Kind: StepNone, Phase: st.Phase}
	}
	if o.TreeError != "" && !Started(st) {
		return failed(StepSettle, v1alpha1.FailureInvalidRequest, ReasonInvalidTree, o.TreeError)
	}
	if s, ok := cancelTrigger(o); ok {
		return s
	}
	if spec.Detach {
		return Step{Kind: StepDetach, Phase: v1alpha1.PhaseDetached,
			Outcome: v1alpha1.Outcome{Reason: ReasonDetached, Message: "no longer followed; the remote task keeps running"}}
	}
	if !Started(st) && (st.Phase == "" || st.Phase == v1alpha1.PhasePending) {
		if s, ok := waitForParent(o); ok {
			return s
		}
		if IsGroup(spec) {
			return Group(o)
		}
		if o.Agent.NotGranted {
			return NotGranted(spec)
		}
		if !o.Agent.Found {
			return wait(ReasonAgentNotFound, fmt.Sprintf("Agent %q not found", spec.AgentRef.Name))
		}
		if !o.Agent.Ready {
			return wait(ReasonAgentNotReady, fmt.Sprintf("Agent %q is not Ready", spec.AgentRef.Name))
		}
		return Step{Kind: StepStart, Phase: v1alpha1.PhaseRunning}
	}
	if IsGroup(spec) {
		return Group(o)
	}
	if at, waiting := RetryWait(o); waiting {
		out := v1alpha1.Outcome{Reason: ReasonRetryScheduled, Message: "attempt " + strconv.Itoa(int(st.Attempt)) + " at " + stamp(at)}
		if st.Outcome != nil && st.Outcome.Reason == ReasonRetryScheduled {
			out = *st.Outcome
		}
		return Step{Kind: StepBackoff, Phase: v1alpha1.PhaseRunning, Outcome: out, At: at}
	}
	if st.TaskID == "" {
		// A send without a task id is decided by evidence (PendingSend,
		// AfterSend, AfterLookUp), never by the clock alone: it is looked
		// up or made again until the deadline above ends it.
		return Step{Kind: StepStart, Phase: v1alpha1.PhaseRunning}
	}
	if LeaseLapsed(o) {
		return LeaseLapse(o)
	}
	return Step{Kind: StepFollow, Phase: st.Phase}
}

// cancelTrigger finds a reason to stop the task: an explicit request, the
// parent's end (policy Cancel), or a deadline. Timers never cancel a task that
// was handed back for input; explicit requests do.
func cancelTrigger(o Observation) (Step, bool) {
	spec, st := o.Spec, o.Status
	interrupted := Interrupted(st.Phase)
	if spec.Cancel {
		return canceled(ReasonRequested, "cancel requested in spec"), true
	}
	if p := o.Parent; p != nil && spec.ParentClosePolicy != v1alpha1.ParentClosePolicyDetach {
		switch {
		case p.Deleting && (Started(st) || st.StartTime != nil || p.Owns):
			return canceled(ReasonParentDeleted, "the parent is being deleted"), true
		case !p.Found && (Started(st) || st.StartTime != nil):
			return canceled(ReasonParentDeleted, "the parent no longer exists"), true
		case p.Phase == v1alpha1.PhaseCanceled:
			return canceled(ReasonParentEnded, "the parent was cancelled"), true
		case (p.Phase == v1alpha1.PhaseSucceeded || p.Phase == v1alpha1.PhaseFailed) && !interrupted:
			return canceled(ReasonParentEnded, fmt.Sprintf("the parent ended (%s) before this task settled", p.Phase)), true
		case !p.Deadline.IsZero() && !o.Now.Before(p.Deadline) && !interrupted:
			return canceled(ReasonParentExpired, "the parent's deadline passed"), true
		}
	}
	if st.Deadline != nil && !o.Now.Before(st.Deadline.Time) && !interrupted {
		s := failed(StepCancel, v1alpha1.FailureBudgetExhausted, ReasonDeadline, "the deadline passed at "+st.Deadline.UTC().Format("2006-01-02T15:04:05Z"))
		return s, true
	}
	return Step{}, false
}

// waitForParent keeps a child Pending until its parent exists and runs, so
// GitOps can apply a tree in any order.
func waitForParent(o Observation) (Step, bool) {
	p := o.Parent
	switch {
	case p == nil:
		return Step{}, false
	case !p.Found:
		return wait(ReasonParentNotFound, fmt.Sprintf("parent %q not found", o.Spec.ParentRef.Name)), true
	case p.Deleting && !p.Owns:
		// A parent of the same name is going away: this child was never
		// started under it, so it waits for the parent that replaces it.
		return wait(ReasonWaitingParent, fmt.Sprintf("parent %q is being deleted; waiting for it to be created again", o.Spec.ParentRef.Name)), true
	case parentActive(p.Phase), p.Phase == v1alpha1.PhaseDetached:
		return Step{}, false
	case Settled(p.Phase) && o.Spec.ParentClosePolicy == v1alpha1.ParentClosePolicyDetach:
		return Step{}, false
	}
	return wait(ReasonWaitingParent, fmt.Sprintf("parent %q is %s", o.Spec.ParentRef.Name, phaseOrPending(p.Phase))), true
}

func phaseOrPending(p v1alpha1.Phase) v1alpha1.Phase {
	if p == "" {
		return v1alpha1.PhasePending
	}
	return p
}

// Group settles a Delegation without agent from its children: it runs while
// any child is active (or none exists yet) and then takes the worst outcome.
func Group(o Observation) Step {
	c := o.Children
	total := c.Active + c.Succeeded + c.Failed + c.Canceled
	switch {
	case c.Active > 0 || total == 0:
		return Step{Kind: StepGroup, Phase: v1alpha1.PhaseRunning, Outcome: v1alpha1.Outcome{Reason: ReasonWaitingChildren,
			Message: fmt.Sprintf("%d of %d children active", c.Active, total)}}
	case c.Failed > 0:
		return Step{Kind: StepGroup, Phase: v1alpha1.PhaseFailed, Outcome: v1alpha1.Outcome{Reason: ReasonChildFailed,
			FailureClass: v1alpha1.FailureInternal, Message: fmt.Sprintf("%d of %d children failed", c.Failed, total)}}
	case c.Canceled > 0:
		return Step{Kind: StepGroup, Phase: v1alpha1.PhaseCanceled, Outcome: v1alpha1.Outcome{Reason: ReasonChildCanceled,
			Message: fmt.Sprintf("%d of %d children were cancelled", c.Canceled, total)}}
	}
	return Step{Kind: StepGroup, Phase: v1alpha1.PhaseSucceeded, Outcome: v1alpha1.Outcome{Reason: ReasonCompleted,
		Message: fmt.Sprintf("all %d children succeeded", total)}}
}

// AfterRead decides from the task the agent reported when it was read back
// (a poll, a renewal, a stream's event, the answer to a send or a cancel).
func AfterRead(o Observation, t *a2a.Task) Read {
	settle := func(phase v1alpha1.Phase, out v1alpha1.Outcome) Read {
		return Read{Next: ReadSettle, Record: Record{Phase: phase, Outcome: out}}
	}
	switch t.State {
	case a2a.StateCompleted:
		return settle(v1alpha1.PhaseSucceeded, v1alpha1.Outcome{Reason: ReasonCompleted, Message: t.StatusText})
	case a2a.StateFailed:
		return settle(v1alpha1.PhaseFailed, v1alpha1.Outcome{Reason: ReasonRemoteFailed, FailureClass: failureClass(t.FailureClass), Message: t.StatusText})
	case a2a.StateRejected:
		return settle(v1alpha1.PhaseFailed, v1alpha1.Outcome{Reason: ReasonRemoteRejected, FailureClass: v1alpha1.FailureRejected, Message: t.StatusText})
	case a2a.StateCanceled:
		return settle(v1alpha1.PhaseCanceled, v1alpha1.Outcome{Reason: ReasonRemote, Message: t.StatusText})
	case a2a.StateInputRequired, a2a.StateAuthRequired:
		phase, reason := v1alpha1.PhaseInputRequired, ReasonInputRequired
		if t.State == a2a.StateAuthRequired {
			phase, reason = v1alpha1.PhaseAuthRequired, ReasonAuthRequired
		}
		// Replies answer a question; an auth challenge is met out of band.
		if t.State == a2a.StateInputRequired && int(o.Status.RepliesSent) < len(o.Spec.Replies) {
			return Read{Next: ReadReply, Record: Progress(v1alpha1.PhaseRunning, ReasonWorking, "sending a reply")}
		}
		return Read{Next: ReadGoOn, Record: Progress(phase, reason, t.StatusText)}
	}
	return Read{Next: ReadGoOn, Record: Progress(v1alpha1.PhaseRunning, ReasonWorking, t.StatusText)}
}

// ReplyAccepted is the record of a reply the agent accepted: the task runs
// again.
func ReplyAccepted() Record { return Progress(v1alpha1.PhaseRunning, ReasonWorking, "reply sent") }

// Lost is the record of a task the agent no longer knows.
func Lost() Record {
	return failed(StepSettle, v1alpha1.FailureInternal, ReasonTaskLost, "the agent no longer knows the task").Record()
}

// SendRefused is the record of a send the agent answered with a refusal.
func SendRefused(class, msg string) Record {
	return failed(StepSettle, failureClass(class), ReasonSendRefused, msg).Record()
}

// failureClass maps what an agent reported to a known class; anything
// unknown reads as Internal.
func failureClass(s string) v1alpha1.FailureClass {
	switch c := v1alpha1.FailureClass(s); c {
	case v1alpha1.FailureInvalidRequest, v1alpha1.FailureTransient, v1alpha1.FailurePolicyRefusal,
		v1alpha1.FailureBudgetExhausted, v1alpha1.FailureInternal, v1alpha1.FailureUnreachable, v1alpha1.FailureRejected:
		return c
	}
	return v1alpha1.FailureInternal
}
