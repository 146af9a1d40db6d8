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

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"

	"github.com/tether-dev/tether/internal/tracing"
)

type delegationKey struct{}

// claim is what a task says about the Delegation that sent it, with the ids
// that can prove it: the operator derives a task's first message id from the
// Delegation's UID (internal/delegation.MessageID), and records the task id
// in the Delegation's status.
type claim struct {
	key       types.NamespacedName
	messageID string // the task's first message
	taskID    string
}

// DelegationFrom returns the Delegation whose task the executor is working
// on, as the message metadata names it; false when the task did not come
// from the operator. The name is a claim: Delegate verifies it before it
// creates anything.
func DelegationFrom(ctx context.Context) (types.NamespacedName, bool) {
	c, ok := ctx.Value(delegationKey{}).(claim)
	return c.key, ok
}

func withDelegation(ctx context.Context, c claim) context.Context {
	return context.WithValue(ctx, delegationKey{}, c)
}

// delegationOf reads "namespace/name" from the message, or from the first
// message of the task when a reply does not repeat it.
func delegationOf(ec *a2asrv.ExecutorContext) (claim, bool) {
	first := ec.Message
	if ec.StoredTask != nil && len(ec.StoredTask.History) > 0 && ec.StoredTask.History[0] != nil {
		first = ec.StoredTask.History[0]
	}
	raw, ok := extensionData(ec.Message, ec.Metadata, tethera2a.DelegationMetadataKey)
	if !ok && first != nil {
		raw, ok = extensionData(first, nil, tethera2a.DelegationMetadataKey)
	}
	s, _ := raw.(string)
	ns, name, found := strings.Cut(s, "/")
	if !ok || !found || ns == "" || name == "" {
		return claim{}, false
	}
	c := claim{key: types.NamespacedName{Namespace: ns, Name: name}, taskID: string(ec.TaskID)}
	if first != nil {
		c.messageID = first.ID
	}
	return c, true
}

// ErrClaimNotProven is returned by Delegate when the task names a Delegation
// that did not send it: its first message id is not the one the operator
// derives from that Delegation's UID, and its task id is not the one in that
// Delegation's status. Nothing is created then, so a caller cannot spend
// another namespace's budget or use its Agents by naming its Delegation.
var ErrClaimNotProven = errors.New("the task is not the named Delegation's")

// verifyClaim reads the named Delegation and checks that this task is its.
func verifyClaim(ctx context.Context, c client.Reader, cl claim) error {
	d := &v1alpha1.Delegation{}
	if err := c.Get(ctx, cl.key, d); err != nil {
		return fmt.Errorf("reading the task's Delegation %s: %w", cl.key, err)
	}
	if cl.messageID != "" && cl.messageID == delegation.MessageID(string(d.UID), -1) {
		return nil
	}
	if cl.taskID != "" && cl.taskID == d.Status.TaskID {
		return nil
	}
	return fmt.Errorf("%w: it claims Delegation %s", ErrClaimNotProven, cl.key)
}

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

// ChildName is the name Delegate gives the child with this key.
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
	name := parent + "-" + k
	// Stay a valid label value (63), which tools commonly need; a hash keeps
	// long names distinct.
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(parent + "/" + key))
		name = strings.TrimRight(name[:54], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return name
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
	parent := cl.key
	if req.Key == "" || req.Agent == "" {
		return client.ObjectKey{}, errors.New("delegate: Key and Agent are required")
	}
	if err := verifyClaim(ctx, c, cl); err != nil {
		return client.ObjectKey{}, fmt.Errorf("delegate: %w", err)
	}
	key := client.ObjectKey{Namespace: parent.Namespace, Name: ChildName(parent.Name, req.Key)}
	budget := BudgetFrom(ctx)
	if err := budget.reserve(key.Name, req.Budget); err != nil {
		return client.ObjectKey{}, fmt.Errorf("delegate %s: %w", key.Name, err)
	}

	child := &v1alpha1.Delegation{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: v1alpha1.DelegationSpec{
			AgentRef:  &v1alpha1.LocalRef{Name: req.Agent},
			Skill:     req.Skill,
			ParentRef: &v1alpha1.LocalRef{Name: parent.Name},
			Message:   &v1alpha1.Message{Text: req.Text},
		},
	}
	if tp := tracing.Annotate(ctx); tp != "" {
		// The child's span continues this task's (the operator reads it).
		child.Annotations = map[string]string{tracing.TraceparentAnnotation: tp}
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
		return client.ObjectKey{}, fmt.Errorf("delegate %s: %w", key.Name, err)
	}
	return key, nil
}

// createOrFind creates the child, or accepts the one a previous call created.
func createOrFind(ctx context.Context, c client.Client, child *v1alpha1.Delegation) error {
	err := c.Create(ctx, child)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := &v1alpha1.Delegation{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(child), existing); err != nil {
		return err
	}
	if p := existing.Spec.ParentRef; p == nil || p.Name != child.Spec.ParentRef.Name {
		return errors.New("it exists and belongs to another parent")
	}
	return nil
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
