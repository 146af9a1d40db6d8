/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"context"
	"errors"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

const opSubscribe = "SubscribeToTask"

// StreamEvent is what one event of a task's stream says: whose task it is
// about and the state it reports (StateUnknown for an artifact or message
// event), and, once the task ended, the task itself when the stream brought
// all of it (see snapshot.go).
type StreamEvent struct {
	TaskID string
	State  State
	// Task is set when the event is the whole task (what SubscribeToTask
	// must send first), not an update.
	Task bool
	// Ended is the ended task as the stream shows it: the first whole task
	// with every later update applied, what a GetTask would answer. Nil
	// when the event does not end the task or the stream did not bring all
	// of it (no whole task first, artifacts past the response bound, an
	// event of another task): then the task must be read.
	Ended *Task
}

// ErrNoStream matches (errors.Is) a Subscribe at a client that cannot
// stream (the gRPC binding, protocol 0.3).
var ErrNoStream = errors.New("this client does not stream")

// Subscribe follows a task's events (1.0 SubscribeToTask) until the agent
// ends the stream, ctx ends or the caller stops. The stream's connection
// has no overall timeout (the caller bounds it); every response is still
// size-bounded, so a stream that sends without end is cut at the bound.
func (c *client) Subscribe(ctx context.Context, taskID string) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		if c.stream == nil {
			yield(StreamEvent{}, localError(opSubscribe, ReasonUnsupported, ErrNoStream))
			return
		}
		if taskID == "" {
			yield(StreamEvent{}, localError(opSubscribe, ReasonInvalidRequest, errors.New("empty task id")))
			return
		}
		sctx, ci := withCallInfo(ctx)
		snap := newTaskSnapshot(taskID, c.snapshotBytes)
		for ev, err := range c.stream.SubscribeToTask(sctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(taskID)}) {
			if err != nil {
				yield(StreamEvent{}, ci.wrap(opSubscribe, err))
				return
			}
			snap.apply(ev)
			out := streamEventFromWire(ev)
			if out.State.Terminal() {
				out.Ended = snap.ended()
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}

func streamEventFromWire(ev a2a.Event) StreamEvent {
	out := StreamEvent{TaskID: string(ev.TaskInfo().TaskID), State: StateUnknown}
	switch e := ev.(type) {
	case *a2a.Task:
		out.State, out.Task = ParseState(string(e.Status.State)), true
	case *a2a.TaskStatusUpdateEvent:
		out.State = ParseState(string(e.Status.State))
	}
	return out
}
