/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	tethera2a "github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// The claim check is specified step by step in the package documentation
// and in docs/security.md; the TypeScript agentkit implements the same one.

type delegationKey struct{}

// claim is what a task says about the Delegation that sent it, with what
// proves it: the task's ids, checked against the Delegation's UID and
// status, and the kit's own origins, checked against the Delegation's Agent.
type claim struct {
	key            types.NamespacedName
	firstMessageID string // the task's first message
	taskID         string
	caller         string // the authenticated user who sent the message; "" when none
	kit            *Kit
}

// ErrClaimNotProven is returned by Delegate when the task's claim does not
// hold: the named Delegation was not sent to this agent, does not run any
// more, or this task is not the one sent for it. Nothing is created then,
// so an agent that received a claim cannot make another agent spend the
// Delegation's budget or use its namespace's Agents by forwarding it.
var ErrClaimNotProven = errors.New("the task is not the named Delegation's")

// EventClaimNotProven is the reason of the Warning Event recorded on a
// Delegation sent to this agent when a claim on it is refused.
const EventClaimNotProven = "ClaimNotProven"

// DelegationFrom returns the Delegation whose task the executor is working
// on, as the message names it; false when the message did not come from the
// operator. The name is a claim: Delegate proves it before it creates
// anything.
func DelegationFrom(ctx context.Context) (types.NamespacedName, bool) {
	c, ok := ctx.Value(delegationKey{}).(claim)
	return c.key, ok
}

func withDelegation(ctx context.Context, c claim) context.Context {
	return context.WithValue(ctx, delegationKey{}, c)
}

// delegationOf reads "namespace/name" from the message being executed (or
// its request). Earlier messages of the task are not consulted: the operator
// puts the claim on every message it sends, and a claim read from the
// history would let a reply from anyone speak for the task's first sender.
func delegationOf(ec *a2asrv.ExecutorContext) (claim, bool) {
	raw, ok := extensionData(ec.Message, ec.Metadata, tethera2a.DelegationMetadataKey)
	s, _ := raw.(string)
	ns, name, found := strings.Cut(s, "/")
	if !ok || !found || ns == "" || name == "" {
		return claim{}, false
	}
	c := claim{key: types.NamespacedName{Namespace: ns, Name: name}, taskID: string(ec.TaskID)}
	if u, ok := callerOf(ec.User); ok {
		c.caller = u.Username
	}
	first := ec.Message
	if ec.StoredTask != nil && len(ec.StoredTask.History) > 0 && ec.StoredTask.History[0] != nil {
		first = ec.StoredTask.History[0]
	}
	if first != nil {
		c.firstMessageID = first.ID
	}
	return c, true
}

// prove reads the claimed Delegation and its Agent and returns the
// Delegation when the claim holds. A refusal wraps ErrClaimNotProven; other
// errors are reads that failed and may be retried.
func (cl claim) prove(ctx context.Context, c client.Reader) (*v1alpha1.Delegation, error) {
	if reason := cl.fromOperator(); reason != "" {
		// Refused before anything is read: a caller who is not the
		// operator learns nothing about the Delegation, and writes no
		// Event into its namespace.
		return nil, cl.refused(reason)
	}
	d := &v1alpha1.Delegation{}
	if err := c.Get(ctx, cl.key, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cl.refused("it does not exist")
		}
		return nil, fmt.Errorf("reading the task's Delegation %s: %w", cl.key, err)
	}
	var agent *v1alpha1.Agent
	if key, ok := d.AgentKey(); ok {
		agent = &v1alpha1.Agent{}
		err := c.Get(ctx, key, agent)
		switch {
		case apierrors.IsNotFound(err):
			agent = nil
		case err != nil:
			return nil, fmt.Errorf("reading Agent %s of the task's Delegation: %w", key, err)
		}
	}
	var origins []string
	if cl.kit != nil {
		origins = cl.kit.origins
	}
	reason, sentHere := claimRefusal(cl, d, agent, origins)
	if reason == "" {
		return d, nil
	}
	err := cl.refused(reason)
	if sentHere && cl.kit != nil {
		// The Delegation was sent to this agent: the refusal is its to
		// report. A claim on a Delegation sent elsewhere writes nothing
		// into that namespace.
		cl.kit.warn(d, EventClaimNotProven, err.Error())
	}
	return nil, err
}

// fromOperator says why the message's sender may not make the claim (""
// when it may): with WithOperator, only the operator's identity may.
func (cl claim) fromOperator() string {
	if cl.kit == nil || cl.kit.operator == "" || cl.caller == cl.kit.operator {
		return ""
	}
	if cl.caller == "" {
		return fmt.Sprintf("only the operator (%s) may name, and this message came from an unauthenticated caller", cl.kit.operator)
	}
	return fmt.Sprintf("only the operator (%s) may name, and this message came from %s", cl.kit.operator, cl.caller)
}

func (cl claim) refused(reason string) error {
	return fmt.Errorf("%w: it claims Delegation %s, which %s", ErrClaimNotProven, cl.key, reason)
}

// claimRefusal is the claim check on what was read: why the claim does not
// hold ("" when it does), and whether the Delegation was sent to this agent
// (step 4 held), which decides whether the refusal may be recorded on it.
func claimRefusal(cl claim, d *v1alpha1.Delegation, agent *v1alpha1.Agent, origins []string) (reason string, sentHere bool) {
	where := sentTo(agent, origins)
	sentHere = where == ""
	switch st := &d.Status; {
	case d.DeletionTimestamp != nil:
		return "is being deleted", sentHere
	case d.Spec.Cancel:
		return "was cancelled", sentHere
	case d.Spec.Detach:
		return "was detached", sentHere
	case st.Phase.Settled():
		return "no longer runs (" + string(st.Phase) + ")", sentHere
	case st.TaskID != "" && st.TaskID != cl.taskID:
		return fmt.Sprintf("was sent as task %q, not %q", st.TaskID, cl.taskID), sentHere
	case st.TaskID == "" && (cl.firstMessageID == "" || cl.firstMessageID != delegation.AttemptMessageID(string(d.UID), delegation.AttemptOf(st))):
		return fmt.Sprintf("did not send message %q", cl.firstMessageID), sentHere
	case !sentHere:
		return where, false
	}
	return "", true
}

// sentTo says why the Agent is not this agent ("" when it is): the origin
// of the endpoint the operator sends to must be one of the kit's own.
func sentTo(agent *v1alpha1.Agent, origins []string) string {
	switch {
	case agent == nil:
		return "has no Agent"
	case len(origins) == 0:
		return "may have been sent anywhere: this agent knows none of its own origins (agentkit.WithOrigins)"
	case agent.Status.Endpoint == "":
		return fmt.Sprintf("has an Agent %q with no endpoint", agent.Name)
	}
	o, err := Origin(agent.Status.Endpoint)
	if err != nil {
		return fmt.Sprintf("was sent through Agent %q to %q: %v", agent.Name, agent.Status.Endpoint, err)
	}
	if !slices.Contains(origins, o) {
		return fmt.Sprintf("was sent to another agent (%s, through Agent %q)", o, agent.Name)
	}
	return ""
}

const (
	schemeHTTP  = "http"
	schemeHTTPS = "https"
)

// Origin normalises an http(s) URL to scheme://host:port, scheme and host
// in lower case and the scheme's default port written out: the form the
// claim check compares.
func Origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %w", err)
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	switch {
	case scheme == schemeHTTPS && port == "":
		port = "443"
	case scheme == schemeHTTP && port == "":
		port = "80"
	case scheme != schemeHTTPS && scheme != schemeHTTP:
		return "", fmt.Errorf("unsupported scheme %q (http or https)", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("the URL has no host")
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// warn records a Warning Event on an object this agent may report on; a
// kit without a recorder records nothing.
func (k *Kit) warn(obj *v1alpha1.Delegation, reason, note string) {
	if k.recorder == nil {
		return
	}
	k.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Delegate", "%s", note)
}
