/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
)

const (
	opNewClient   = "NewClient"
	opSend        = "SendMessage"
	opGet         = "GetTask"
	opCancel      = "CancelTask"
	opList        = "ListTasks"
	listPageSize  = 50
	listPageLimit = 40 // a context with more than 2000 tasks is not one we adopt from
	// listHistory is how many recent messages each listed task carries: enough
	// to find the client's own message ids, small enough for the size bound.
	listHistory = 8
	// listKeptBytes bounds what a look-up keeps across all its pages (ids,
	// states and message ids only): a context that needs more is one we do
	// not adopt from (ErrTooManyTasks), however its pages are cut.
	listKeptBytes = 1 << 20
)

// noHistory asks for a task without its message history. Every call but the
// look-up by context asks for it: the operator reads the state, the status
// message and the artifacts, never the history, and an agent that posts
// hundreds of progress messages would otherwise push every answer over the
// size bound.
func noHistory() *int { n := 0; return &n }

// Dial reads the agent card and returns a client for the interface it chose.
func Dial(ctx context.Context, ep Endpoint) (Client, error) {
	card, err := ResolveCard(ctx, ep)
	if err != nil {
		return nil, err
	}
	return NewClient(ctx, ep, card)
}

// NewClient returns a client for an already resolved card, so callers that
// cache cards do not read the card on every call. The tenant is ep.Tenant,
// else the card interface's.
func NewClient(ctx context.Context, ep Endpoint, card *Card) (Client, error) {
	if card == nil || card.URL == "" {
		return nil, localError(opNewClient, ReasonInvalidRequest, errors.New("no agent card interface to connect to"))
	}
	hc, err := endpointHTTPClient(ep)
	if err != nil {
		return nil, endpointError(opNewClient, err)
	}
	// The card may have been recorded before the Agent's origins changed.
	if err := checkCardOrigin(ep, card); err != nil {
		return nil, originError(opNewClient, err)
	}
	version := normaliseVersion(card.ProtocolVersion)
	ifaceURL := card.URL
	// Streams run on their own connections without the per-call timeout.
	streamHC, err := streamHTTPClient(ep)
	if err != nil {
		return nil, endpointError(opNewClient, err)
	}
	var transport, streamTransport a2aclient.FactoryOption
	switch {
	case version == ProtocolV1 && card.Binding == BindingGRPC:
		target, opts, err := grpcDialOptions(ep, card.URL)
		if err != nil {
			return nil, localError(opNewClient, ReasonInvalidRequest, err)
		}
		transport, ifaceURL = a2agrpc.WithGRPCTransport(opts...), target
	case version == ProtocolV1 && card.Binding == BindingJSONRPC:
		transport, streamTransport = a2aclient.WithJSONRPCTransport(hc), a2aclient.WithJSONRPCTransport(streamHC)
	case version == ProtocolV1 && card.Binding == BindingHTTPJSON:
		transport, streamTransport = a2aclient.WithRESTTransport(hc), a2aclient.WithRESTTransport(streamHC)
	case version == ProtocolV03 && card.Binding == BindingJSONRPC:
		transport = a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc})
	case version == ProtocolV03 && card.Binding == BindingHTTPJSON:
		transport = a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc})
	default:
		return nil, localError(opNewClient, ReasonUnsupported, fmt.Errorf("%w: binding %q protocol %q", ErrUnsupported, card.Binding, card.ProtocolVersion))
	}
	tenant := ep.Tenant
	if tenant == "" {
		tenant = card.Tenant
	}
	iface := &a2a.AgentInterface{
		URL:             ifaceURL,
		ProtocolBinding: a2a.TransportProtocol(card.Binding),
		ProtocolVersion: a2a.ProtocolVersion(version),
		Tenant:          tenant, // a2a-go puts it on every request
	}
	build := func(t a2aclient.FactoryOption) (*a2aclient.Client, error) {
		return a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface},
			a2aclient.WithDefaultsDisabled(),
			a2aclient.WithConfig(a2aclient.Config{DisableTenantPropagation: true}),
			a2aclient.WithCallInterceptors(versionOverride{}),
			t)
	}
	c, err := build(transport)
	if err != nil {
		return nil, localError(opNewClient, ReasonUnsupported, err)
	}
	cp := *card
	out := &client{card: &cp, c: c, v03: version == ProtocolV03, snapshotBytes: maxStreamBytes(ep)}
	if streamTransport != nil && card.Streaming {
		if out.stream, err = build(streamTransport); err != nil {
			_ = c.Destroy()
			return nil, localError(opNewClient, ReasonUnsupported, err)
		}
	}
	return out, nil
}

type client struct {
	card *Card
	c    *a2aclient.Client
	// stream follows tasks (nil when the card does not stream).
	stream *a2aclient.Client
	v03    bool
	// snapshotBytes bounds the artifacts a stream's task snapshot holds:
	// the bound on one event, so a stream holds no more than the memory
	// budget counts for it (a larger result is read).
	snapshotBytes int64
}

func (c *client) Card() *Card { return c.card }

func (c *client) Close() {
	_ = c.c.Destroy()
	if c.stream != nil {
		_ = c.stream.Destroy()
	}
}

// Send sends without waiting for the task to finish. Metadata, the skill
// (under SkillMetadataKey) and the lease and budget data go on both the
// message and the request metadata, so agents find them whichever they read.
// Extension data is always announced with its extension header, whether or
// not the card lists the extension: an agent that does not know it ignores both.
// The trace context goes into the metadata only for agents whose card asks
// for it (TraceContextExtensionURI); the headers carry it on every call.
func (c *client) Send(ctx context.Context, req SendRequest) (*Task, error) {
	msg, meta, exts, err := buildSend(req)
	if err != nil {
		return nil, localError(opSend, ReasonInvalidRequest, err)
	}
	if traced, ok := c.traceContextMeta(ctx, msg.Metadata); ok {
		msg.Metadata = traced
		meta, _ = c.traceContextMeta(ctx, meta)
		exts = append(slices.Clone(exts), TraceContextExtensionURI)
		msg.Extensions = exts
	}
	ctx, ci := withCallInfo(ctx)
	// 0.3: a2a-go sends ReturnImmediately as blocking=false.
	cfg := &a2a.SendMessageConfig{ReturnImmediately: true, HistoryLength: noHistory()}
	if p := req.Push; p != nil {
		cfg.PushConfig = pushConfig(p)
	}
	res, err := c.c.SendMessage(activate(ctx, exts...), &a2a.SendMessageRequest{Message: msg, Metadata: meta, Config: cfg})
	if err != nil {
		return nil, ci.wrap(opSend, err)
	}
	switch r := res.(type) {
	case *a2a.Task:
		return checked(opSend, taskFromWire(r))
	case *a2a.Message:
		return checked(opSend, taskFromMessage(r))
	}
	return nil, &Error{Kind: KindTransport, Op: opSend, Reason: ReasonInvalidResponse, Err: fmt.Errorf("unexpected result %T", res)}
}

// pushConfig registers a receiver; the token goes both ways the
// specification and the SDKs present it.
func pushConfig(p *PushTarget) *a2a.PushConfig {
	return &a2a.PushConfig{URL: p.URL, Token: p.Token, Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: p.Token}}
}

// Get reads a task; renewLease activates the lease extension, which is what
// renews a lease (a plain GetTask renews nothing).
func (c *client) Get(ctx context.Context, taskID string, renewLease bool) (*Task, error) {
	if taskID == "" {
		return nil, localError(opGet, ReasonInvalidRequest, errors.New("empty task id"))
	}
	ctx, ci := withCallInfo(ctx)
	if renewLease {
		ctx = activate(ctx, LeaseExtensionURI)
	}
	t, err := c.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID), HistoryLength: noHistory()})
	if err != nil {
		return nil, ci.wrap(opGet, err)
	}
	return checked(opGet, taskFromWire(t))
}

// Cancel asks the agent to cancel. TaskNotCancelable means the task is
// already terminal: the task is read back and returned without error. A2A's
// CancelTask cannot ask for less history, so its answer may be over the size
// bound (ErrAnswerTooLarge): the agent did answer, so the cancel counts as
// delivered and the task is read back without history.
func (c *client) Cancel(ctx context.Context, taskID string) (*Task, error) {
	if taskID == "" {
		return nil, localError(opCancel, ReasonInvalidRequest, errors.New("empty task id"))
	}
	cctx, ci := withCallInfo(ctx)
	req := &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)}
	if meta, ok := c.traceContextMeta(ctx, nil); ok {
		req.Metadata = meta
		cctx = activate(cctx, TraceContextExtensionURI)
	}
	t, err := c.c.CancelTask(cctx, req)
	if err == nil {
		return checked(opCancel, taskFromWire(t))
	}
	err = ci.wrap(opCancel, err)
	var e *Error
	if (errors.As(err, &e) && e.Reason == ReasonTaskNotCancelable) || errors.Is(err, ErrAnswerTooLarge) {
		return c.Get(ctx, taskID, false)
	}
	return nil, err
}

// ListByContext lists the tasks of a context (1.0 ListTasks). Tasks carry
// their ids, state and the ids of the client's recent messages only, not
// artifacts or texts (Get reads a result): each page is cut down to those
// on the wire, before it is decoded (list_wire.go). A look-up keeps at most
// listKeptBytes of them across its pages. ErrUnsupported on 0.3 agents and agents that do not
// implement ListTasks. A page over the size bound is asked again smaller
// (half the tasks, down to one, then that one without history), so long
// histories cost message ids, not the look-up. A context with more than
// listPageLimit pages is an ErrTooManyTasks error, never a partial list.
func (c *client) ListByContext(ctx context.Context, contextID string) ([]*Task, error) {
	if c.v03 {
		return nil, localError(opList, ReasonUnsupported, fmt.Errorf("%w: %w: protocol 0.3 has no ListTasks", ErrCannotList, ErrUnsupported))
	}
	if contextID == "" {
		return nil, localError(opList, ReasonInvalidRequest, errors.New("empty context id"))
	}
	var out []*Task
	kept := 0
	token := ""
	pageSize, history := listPageSize, listHistory
	for pages := 0; ; {
		if pages == listPageLimit {
			return nil, &Error{Kind: KindTransport, Op: opList, Reason: ReasonTooManyTasks,
				Err: fmt.Errorf("%w: more than %d pages of %d", ErrTooManyTasks, listPageLimit, pageSize)}
		}
		pctx, ci := withCallInfo(idsOnly(ctx))
		h := history
		resp, err := c.c.ListTasks(pctx, &a2a.ListTasksRequest{ContextID: contextID, PageSize: pageSize, PageToken: token,
			HistoryLength: &h})
		if err != nil {
			err = ci.wrap(opList, err)
			if errors.Is(err, ErrResponseTooLarge) && (pageSize > 1 || history > 0) {
				if pageSize > 1 {
					pageSize /= 2
				} else {
					history = 0
				}
				continue
			}
			return nil, cannotList(err)
		}
		pages++
		for _, t := range resp.Tasks {
			// Guard against agents that ignore the filter: adopting a task
			// of another context would be worse than adopting none.
			if t != nil && t.ContextID == contextID {
				task, err := checked(opList, taskFromWire(t))
				if err != nil {
					return nil, err
				}
				// A look-up needs ids, states and message ids only: nothing
				// else of a listed task is kept across pages.
				task = &Task{ID: task.ID, ContextID: task.ContextID, State: task.State, MessageIDs: task.MessageIDs}
				kept += len(task.ID) + len(task.ContextID)
				for _, id := range task.MessageIDs {
					kept += len(id)
				}
				if kept > listKeptBytes {
					return nil, &Error{Kind: KindTransport, Op: opList, Reason: ReasonTooManyTasks,
						Err: fmt.Errorf("%w: more than %d bytes of ids", ErrTooManyTasks, listKeptBytes)}
				}
				out = append(out, task)
			}
		}
		if token = resp.NextPageToken; token == "" {
			return out, nil
		}
	}
}

// checked returns t, or an InvalidAgentResponse error when its ids are
// too long to keep.
func checked(op string, t *Task) (*Task, error) {
	if err := checkIDs(op, t); err != nil {
		return nil, err
	}
	return t, nil
}

// activate announces extensions for one call; a2a-go sends them as the
// A2A-Extensions header (X-A2A-Extensions on 0.3).
func activate(ctx context.Context, uris ...string) context.Context {
	if len(uris) == 0 {
		return ctx
	}
	return a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{a2a.SvcParamExtensions: uris})
}
