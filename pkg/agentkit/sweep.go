/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// cancelTimeout bounds one cancel: an executor that ignores its context must
// not stall the sweeper.
const cancelTimeout = 30 * time.Second

// Sweep cancels the tasks whose lease lapsed, through h (so cancellation runs
// the same path as a client's CancelTask), until ctx ends.
func (k *Kit) Sweep(ctx context.Context, h a2asrv.RequestHandler) {
	t := time.NewTicker(k.sweepEvery)
	defer t.Stop()
	var (
		mu       sync.Mutex
		inFlight = map[a2a.TaskID]bool{}
		wg       sync.WaitGroup
	)
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lapsed, err := k.leases.Expired(ctx, k.clock.Now())
		if err != nil {
			k.logger.Warn("listing lapsed leases failed", "error", err)
			continue
		}
		for _, l := range lapsed {
			mu.Lock()
			busy := inFlight[l.TaskID]
			inFlight[l.TaskID] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Go(func() {
				k.cancelLapsed(ctx, h, l)
				mu.Lock()
				delete(inFlight, l.TaskID)
				mu.Unlock()
			})
		}
	}
}

func (k *Kit) cancelLapsed(ctx context.Context, h a2asrv.RequestHandler, l Lease) {
	ctx, cancel := context.WithTimeout(ctx, cancelTimeout)
	defer cancel()
	k.logger.Info("lease lapsed, cancelling task", "task_id", l.TaskID, "expired_at", l.ExpiresAt)
	_, err := h.CancelTask(actingFor(ctx, l.Owner), &a2a.CancelTaskRequest{ID: l.TaskID})
	switch {
	case err == nil, errors.Is(err, a2a.ErrTaskNotFound), errors.Is(err, a2a.ErrTaskNotCancelable):
		// Ended one way or another: nothing left to hold.
		if err := k.leases.Delete(ctx, l.TaskID); err != nil {
			k.logger.Warn("forgetting lease failed", "task_id", l.TaskID, "error", err)
		}
	default:
		k.logger.Warn("cancelling task with lapsed lease failed; will retry", "task_id", l.TaskID, "error", err)
	}
}
