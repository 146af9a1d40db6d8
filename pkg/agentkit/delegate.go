/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/tracing"
)

// DelegateRequest describes a child task.
type DelegateRequest struct {
	// Key names the child among its siblings. The child's name derives from
	// the parent's and the key, so a retried Delegate finds the child it
	// created before instead of creating another.
	Key string
	// Agent is the Agent (in the parent's namespace) that runs the child.
	Agent string
	// Skill optionally asks for one of the agent's skills.
	Skill string
	// Text is the message sent to start the child.
	Text string
	// Budget is granted to the child. It is held from the current task's
	// budget at once, so an agent cannot grant more than it has left.
	Budget map[string]int64
	// Timeout is the child's wall-clock limit; zero for none.
	Timeout time.Duration
	// Lease asks the child's agent to drop the task unless renewed; zero for none.
	Lease time.Duration
}

// Outcome is how a child Delegation ended (or that it waits for input).
type Outcome struct {
	// Name of the child Delegation.
	Name         string
	Phase        v1alpha1.Phase
	Reason       string
	FailureClass v1alpha1.FailureClass
	Message      string
	// Text is the child's result text (bounded by the operator).
	Text string
	// Spent is what the child was charged.
	Spent map[string]int64
}

// AnnotationChild marks a child Delegation agentkit created, with the
// parent's UID and the child's key ("<uid>/<key>"): a retried Delegate
// accepts an existing child only with this mark and the spec it would
// create.
const AnnotationChild = "delegation.tether.dev/agentkit-child"

// ErrChildNameTaken is returned by Delegate when the child's name is held by
// an object agentkit did not create for this parent and key, or with another
// spec. Nothing is reserved for it.
var ErrChildNameTaken = errors.New("the child's name is taken")

// EventChildNameTaken is the reason of the Warning Event recorded on the
// parent when a child's name is taken.
const EventChildNameTaken = "ChildNameTaken"

// childHashLength is how many hex digits of the hash of parent and key end
// a child's name (40 bits).
const childHashLength = 10

// ChildName is the name Delegate gives the child with this key: the parent's
// name and the key made name-safe, then a hash over both. The hash keeps
// keys that read alike ("a_b", "a-b") and different splits of parent and key
// ("a" + "b-c", "a-b" + "c") apart, and long names distinct.
func ChildName(parent, key string) string {
	k := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, key), "-")
	// "/" is in no Delegation name, so parent and key cannot run together.
	sum := sha256.Sum256([]byte(parent + "/" + key))
	hash := hex.EncodeToString(sum[:])[:childHashLength]
	// Stay a valid label value (63), which tools commonly need.
	prefix := parent + "-" + k
	if limit := 63 - 1 - childHashLength; len(prefix) > limit {
		prefix = prefix[:limit]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hash
}

// Delegate creates a child Delegation of the current one and waits for it
// to settle: Succeeded, Failed, Canceled, Detached, or waiting for input.
func Delegate(ctx context.Context, c client.Client, req DelegateRequest) (*Outcome, error) {
	key, err := DelegateAsync(ctx, c, req)
	if err != nil {
		return nil, err
	}
	return Wait(ctx, c, key)
}

// DelegateAsync creates the child Delegation (or finds the one a previous
// call created) and returns its key without waiting.
func DelegateAsync(ctx context.Context, c client.Client, req DelegateRequest) (client.ObjectKey, error) {
	cl, ok := ctx.Value(delegationKey{}).(claim)
	if !ok {
		return client.ObjectKey{}, errors.New("delegate: the task did not come from a Delegation")
	}
	if req.Key == "" || req.Agent == "" {
		return client.ObjectKey{}, errors.New("delegate: Key and Agent are required")
	}
	parent, err := cl.prove(ctx, c)
	if err != nil {
		return client.ObjectKey{}, fmt.Errorf("delegate: %w", err)
	}
	key := client.ObjectKey{Namespace: parent.Namespace, Name: ChildName(parent.Name, req.Key)}
	budget := BudgetFrom(ctx)
	if err := budget.reserve(key.Name, req.Budget); err != nil {
		return client.ObjectKey{}, fmt.Errorf("delegate %s: %w", key.Name, err)
	}

	child := &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Annotations: map[string]string{AnnotationChild: string(parent.UID) + "/" + req.Key}},
		Spec: v1alpha1.DelegationSpec{
			AgentRef:  &v1alpha1.AgentRef{Name: req.Agent},
			Skill:     req.Skill,
			ParentRef: &v1alpha1.LocalRef{Name: parent.Name},
			Message:   &v1alpha1.Message{Text: req.Text},
		},
	}
	if tp := tracing.Annotate(ctx); tp != "" {
		// The child's span continues this task's (the operator reads it).
		if child.Annotations == nil {
			child.Annotations = map[string]string{}
		}
		child.Annotations[tracing.TraceparentAnnotation] = tp
	}
	if len(req.Budget) > 0 {
		child.Spec.Budget = &v1alpha1.BudgetSpec{Meters: req.Budget}
	}
	if req.Timeout > 0 {
		child.Spec.Timeout = &metav1.Duration{Duration: req.Timeout}
	}
	if req.Lease > 0 {
		child.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: req.Lease}}
	}

	if err := createOrFind(ctx, c, child); err != nil {
		budget.release(key.Name)
		if errors.Is(err, ErrChildNameTaken) && cl.kit != nil {
			cl.kit.warn(parent, EventChildNameTaken, fmt.Sprintf("child %s: %v", key.Name, err))
		}
		return client.ObjectKey{}, fmt.Errorf("delegate %s: %w", key.Name, err)
	}
	return key, nil
}

// createOrFind creates the child, or accepts the one a previous call
// created: marked by agentkit for the same parent and key, with the same
// spec. Anyone who may create Delegations in the namespace could have taken
// the name first, with another Agent, message or taskID.
func createOrFind(ctx context.Context, c client.Client, child *v1alpha1.Delegation) error {
	err := c.Create(ctx, child)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := &v1alpha1.Delegation{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(child), existing); err != nil {
		return err
	}
	if mark := existing.Annotations[AnnotationChild]; mark != child.Annotations[AnnotationChild] {
		return fmt.Errorf("%w: it was not created by agentkit for this parent and key", ErrChildNameTaken)
	}
	if !sameChildSpec(&child.Spec, &existing.Spec) {
		return fmt.Errorf("%w: it exists with another spec", ErrChildNameTaken)
	}
	return nil
}

// sameChildSpec compares specs as the API server stores them: defaults
// filled in, nil and empty alike.
func sameChildSpec(want, got *v1alpha1.DelegationSpec) bool {
	w, g := want.DeepCopy(), got.DeepCopy()
	for _, s := range []*v1alpha1.DelegationSpec{w, g} {
		if s.ParentClosePolicy == "" {
			s.ParentClosePolicy = v1alpha1.ParentClosePolicyCancel
		}
	}
	return equality.Semantic.DeepEqual(w, g)
}

// Wait polls a child Delegation until it settles. It needs no state from the
// call that created the child: after a restart, wait again by name. When
// the context carries the task's budget, the child's hold is settled: its
// reported spend replaces the grant, or the whole grant stays spent when it
// ended without a report (canceled, detached).
func Wait(ctx context.Context, c client.Reader, key client.ObjectKey) (*Outcome, error) {
	// Read at once, then after 100ms, 200ms, ... up to every 2s.
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Steps: math.MaxInt32}
	var out *Outcome
	err := backoff.DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		d := &v1alpha1.Delegation{}
		if err := c.Get(ctx, key, d); err != nil {
			return false, err
		}
		o, done := outcomeOf(d)
		if done && settled(o.Phase) {
			BudgetFrom(ctx).settle(key.Name, chargeOf(d))
		}
		out = o
		return done, nil
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("waiting for %s: %w", key.Name, context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("waiting for %s: %w", key.Name, err)
	}
	return out, nil
}

func settled(p v1alpha1.Phase) bool { return p.Settled() }

func outcomeOf(d *v1alpha1.Delegation) (*Outcome, bool) {
	p := d.Status.Phase
	if !settled(p) && p != v1alpha1.PhaseInputRequired && p != v1alpha1.PhaseAuthRequired {
		return nil, false
	}
	o := &Outcome{Name: d.Name, Phase: p}
	if oc := d.Status.Outcome; oc != nil {
		o.Reason, o.FailureClass, o.Message = oc.Reason, oc.FailureClass, oc.Message
	}
	if r := d.Status.Result; r != nil {
		o.Text = r.Text
	}
	if b := d.Status.Budget; b != nil {
		o.Spent = b.Spent
	}
	return o, true
}

// chargeOf is what the child's hold turns into: exactly what the operator
// charges the parent (internal/delegation.Charge), so the agent's view of
// its budget never drifts from the parent's ledger. nil keeps the whole hold.
func chargeOf(d *v1alpha1.Delegation) map[string]int64 {
	if !delegation.Settled(d.Status.Phase) {
		return nil
	}
	var grant v1alpha1.Meters
	if d.Status.Budget != nil {
		grant = d.Status.Budget.Granted
	}
	charge := delegation.Charge(&d.Spec, &d.Status, grant)
	if charge == nil {
		return map[string]int64{} // refunded
	}
	return charge
}
