/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/log"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

var leaseExtension = &a2a.AgentExtension{URI: tethera2a.LeaseExtensionURI}

// Interceptor makes the caller authenticated by WithTokenReview the call's
// user, refuses bad extension metadata before anything starts, renews
// leases on GetTask calls that activate the lease extension once the task
// was read (so only a caller that may read a task renews it), and stamps
// the current lease expiry on every task it returns.
func (k *Kit) Interceptor() a2asrv.CallInterceptor { return &interceptor{kit: k} }

type interceptor struct{ kit *Kit }

func (i *interceptor) Before(
	ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request,
) (context.Context, any, error) {
	if c, ok := CallerFrom(ctx); ok {
		// The task store keys tasks by this user: the caller's tasks are
		// its own. The executor reads the caller back from it.
		callCtx.User = c.asUser()
	}
	switch p := req.Payload.(type) {
	case *a2a.SendMessageRequest:
		if p == nil || p.Message == nil {
			return ctx, nil, nil
		}
		// Refusing here, before a2a-go creates a task, is what makes a refused
		// lease start nothing.
		ttl, err := leaseRequest(p.Message, p.Metadata, i.kit.maxTTL)
		if err != nil {
			return ctx, nil, err
		}
		if _, err := budgetRequest(p.Message, p.Metadata); err != nil {
			return ctx, nil, err
		}
		if ttl != nil {
			callCtx.Extensions().Activate(leaseExtension)
		}
	case *a2a.GetTaskRequest:
		if p == nil || !extensionRequested(callCtx, tethera2a.LeaseExtensionURI) {
			return ctx, nil, nil
		}
		callCtx.Extensions().Activate(leaseExtension)
	}
	return ctx, nil, nil
}

func (i *interceptor) After(ctx context.Context, callCtx *a2asrv.CallContext, resp *a2asrv.Response) error {
	if resp.Err != nil {
		return nil
	}
	t, ok := resp.Payload.(*a2a.Task)
	if !ok || t == nil {
		return nil
	}
	// The task store answered, so this caller owns the task: only now may
	// its GetTask renew the lease.
	if callCtx != nil && callCtx.Method() == "GetTask" && extensionRequested(callCtx, tethera2a.LeaseExtensionURI) {
		if _, _, err := i.kit.leases.Renew(ctx, t.ID, i.kit.clock.Now()); err != nil {
			log.Warn(ctx, "lease renewal failed", "task_id", t.ID, "error", err)
		}
	}
	// Renewals live in the LeaseStore only (a renewal writes no task), so
	// the returned task is told the expiry from there.
	if l, ok, err := i.kit.leases.Get(ctx, t.ID); err == nil && ok {
		t.SetMeta(tethera2a.LeaseExtensionURI, leaseGrantMeta(l))
	}
	return nil
}
