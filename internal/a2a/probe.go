/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// This file is the wire side of kubectl tether check-agent
// (internal/conformance): calls the operator never makes in this form (a
// send with separate message and request metadata, a cancel that does not
// hide TaskNotCancelable, reads with a chosen historyLength), answers kept
// with what the operator drops (raw extension metadata, history sizes), and
// the whole card instead of the chosen interface.

// CardDetails is an agent card as a conformance check reads it.
type CardDetails struct {
	Name string
	// Chosen is the interface the operator would use (nil when none is
	// usable), as ResolveCard returns it.
	Chosen *Card
	// Interfaces are all the card lists, in its order.
	Interfaces []Interface
	// Extensions are the declared extensions' params by URI (nil params for
	// an extension declared without any).
	Extensions map[string]map[string]any
	// Signature is what the card's signatures proved with the endpoint's
	// CardKeys; a card that verified is described from its signed content.
	Signature CardSignature
}

// Interface is one interface a card lists.
type Interface struct {
	URL             string
	Binding         string
	ProtocolVersion string // as the card wrote it
	Tenant          string
	// Card is a client card for this interface; nil when the operator
	// cannot speak its binding and version.
	Card *Card
}

// ReadCardDetails reads the card like ResolveCard, but keeps every interface
// and the extension parameters, and does not refuse a card whose interfaces
// lie outside the endpoint's origins: the caller checks each one
// (CheckInterfaceOrigin).
func ReadCardDetails(ctx context.Context, ep Endpoint) (*CardDetails, error) {
	raw, body, err := readWireCard(ctx, ep)
	if err != nil {
		return nil, err
	}
	sig := VerifyCard(body, ep.CardKeys)
	if sig.Verified {
		if raw, err = signedCard(body); err != nil {
			return nil, localError(opResolveCard, ReasonUnsupported, err)
		}
	}
	d := &CardDetails{Name: cut(raw.Name, MaxCardNameLength), Extensions: map[string]map[string]any{}, Signature: sig}
	if chosen, err := cardFromWire(raw); err == nil {
		chosen.Signature = sig
		d.Chosen = chosen
	}
	for _, e := range raw.Capabilities.Extensions {
		d.Extensions[e.URI] = e.Params
	}
	for _, i := range raw.SupportedInterfaces {
		if i == nil {
			continue
		}
		iface := Interface{URL: i.URL, Binding: string(i.ProtocolBinding), ProtocolVersion: string(i.ProtocolVersion), Tenant: i.Tenant}
		one := *raw
		one.SupportedInterfaces = []*a2a.AgentInterface{i}
		if c, err := cardFromWire(&one); err == nil {
			iface.Card = c
		}
		d.Interfaces = append(d.Interfaces, iface)
	}
	return d, nil
}

// CheckInterfaceOrigin reports whether a card's interface lies within the
// endpoint's origins (the rule every operator call is held to).
func CheckInterfaceOrigin(ep Endpoint, card *Card) error {
	if err := checkCardOrigin(ep, card); err != nil {
		return originError(opResolveCard, err)
	}
	return nil
}

// ProbeSend is one message of a conformance check.
type ProbeSend struct {
	MessageID string
	ContextID string
	TaskID    string
	Text      string
	// MessageMetadata and RequestMetadata are sent as given.
	MessageMetadata map[string]any
	RequestMetadata map[string]any
	// Extensions are activated for the call.
	Extensions []string
	// Push asks the agent to post the task's updates to a receiver.
	Push *PushTarget
}

// ProbeTask is a task as a conformance check sees it.
type ProbeTask struct {
	*Task
	// HistoryLength is how many messages of history the answer carried.
	HistoryLength int
	// Metadata is the task's metadata; StatusMetadata the status message's.
	Metadata       map[string]any
	StatusMetadata map[string]any
	// Message is set when the agent answered a send with a message, not a task.
	Message bool
}

// Prober makes the calls of a conformance check.
type Prober interface {
	Client
	ProbeSend(ctx context.Context, req ProbeSend) (*ProbeTask, error)
	// ProbeGet reads a task with a chosen historyLength (nil: not sent).
	ProbeGet(ctx context.Context, taskID string, historyLength *int, renewLease bool) (*ProbeTask, error)
	// ProbeCancel cancels and returns the answer as it came: a
	// TaskNotCancelable answer is an error here.
	ProbeCancel(ctx context.Context, taskID string) (*ProbeTask, error)
	// ProbeList reads one page of the tasks of a context.
	ProbeList(ctx context.Context, contextID string, historyLength int) ([]*ProbeTask, error)
	// ProbeVersion reads the task with the A2A-Version header set to
	// version instead of the interface's, and returns the agent's answer.
	ProbeVersion(ctx context.Context, taskID, version string) error
}

// NewProber returns a Prober for a card (one interface).
func NewProber(ctx context.Context, ep Endpoint, card *Card) (Prober, error) {
	c, err := NewClient(ctx, ep, card)
	if err != nil {
		return nil, err
	}
	return c.(*client), nil
}

func (c *client) ProbeSend(ctx context.Context, req ProbeSend) (*ProbeTask, error) {
	msg, _, exts, err := buildSend(SendRequest{MessageID: req.MessageID, ContextID: req.ContextID, TaskID: req.TaskID,
		Text: req.Text, Extensions: req.Extensions})
	if err != nil {
		return nil, localError(opSend, ReasonInvalidRequest, err)
	}
	if msg.Metadata, err = probeMeta(req.MessageMetadata); err != nil {
		return nil, localError(opSend, ReasonInvalidRequest, err)
	}
	reqMeta, err := probeMeta(req.RequestMetadata)
	if err != nil {
		return nil, localError(opSend, ReasonInvalidRequest, err)
	}
	ctx, ci := withCallInfo(ctx)
	cfg := &a2a.SendMessageConfig{ReturnImmediately: true, HistoryLength: noHistory()}
	if p := req.Push; p != nil {
		cfg.PushConfig = pushConfig(p)
	}
	res, err := c.c.SendMessage(activate(ctx, exts...), &a2a.SendMessageRequest{Message: msg, Metadata: reqMeta, Config: cfg})
	if err != nil {
		return nil, ci.wrap(opSend, err)
	}
	switch r := res.(type) {
	case *a2a.Task:
		return probed(opSend, r)
	case *a2a.Message:
		t, err := checked(opSend, taskFromMessage(r))
		if err != nil {
			return nil, err
		}
		return &ProbeTask{Task: t, Message: true, Metadata: r.Metadata}, nil
	}
	return nil, &Error{Kind: KindTransport, Op: opSend, Reason: ReasonInvalidResponse, Err: fmt.Errorf("unexpected result %T", res)}
}

func (c *client) ProbeGet(ctx context.Context, taskID string, historyLength *int, renewLease bool) (*ProbeTask, error) {
	ctx, ci := withCallInfo(ctx)
	if renewLease {
		ctx = activate(ctx, LeaseExtensionURI)
	}
	t, err := c.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: historyLength})
	if err != nil {
		return nil, ci.wrap(opGet, err)
	}
	return probed(opGet, t)
}

func (c *client) ProbeCancel(ctx context.Context, taskID string) (*ProbeTask, error) {
	ctx, ci := withCallInfo(ctx)
	t, err := c.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)})
	if err != nil {
		return nil, ci.wrap(opCancel, err)
	}
	return probed(opCancel, t)
}

func (c *client) ProbeList(ctx context.Context, contextID string, historyLength int) ([]*ProbeTask, error) {
	if c.v03 {
		return nil, localError(opList, ReasonUnsupported, fmt.Errorf("%w: %w: protocol 0.3 has no ListTasks", ErrCannotList, ErrUnsupported))
	}
	ctx, ci := withCallInfo(ctx)
	h := historyLength
	resp, err := c.c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: contextID, PageSize: listPageSize, HistoryLength: &h})
	if err != nil {
		return nil, cannotList(ci.wrap(opList, err))
	}
	var out []*ProbeTask
	for _, t := range resp.Tasks {
		if t == nil {
			continue
		}
		p, err := probed(opList, t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (c *client) ProbeVersion(ctx context.Context, taskID, version string) error {
	ctx, ci := withCallInfo(context.WithValue(ctx, versionOverrideKey{}, version))
	_, err := c.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: noHistory()})
	if err != nil {
		return ci.wrap(opGet, err)
	}
	return nil
}

// versionOverrideKey carries the A2A-Version a probe sends instead of the
// interface's (a2a-go sets the header before interceptors run).
type versionOverrideKey struct{}

type versionOverride struct {
	a2aclient.PassthroughInterceptor
}

func (versionOverride) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	if v, ok := ctx.Value(versionOverrideKey{}).(string); ok {
		req.ServiceParams[a2a.SvcParamVersion] = []string{v}
	}
	return ctx, nil, nil
}

func probed(op string, t *a2a.Task) (*ProbeTask, error) {
	if t == nil {
		return nil, &Error{Kind: KindTransport, Op: op, Reason: ReasonInvalidResponse, Err: errors.New("no task in the answer")}
	}
	task, err := checked(op, taskFromWire(t))
	if err != nil {
		return nil, err
	}
	p := &ProbeTask{Task: task, HistoryLength: len(t.History), Metadata: maps.Clone(t.Metadata)}
	if m := t.Status.Message; m != nil {
		p.StatusMetadata = maps.Clone(m.Metadata)
	}
	return p, nil
}

func probeMeta(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return jsonValues(m)
}

// ErrorCode returns the A2A/JSON-RPC error code (or HTTP status) of an
// error from this package, and its reason; 0 and "" for other errors.
func ErrorCode(err error) (int, string) {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code, e.Reason
	}
	return 0, ""
}
