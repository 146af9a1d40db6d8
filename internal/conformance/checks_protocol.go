/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the protocol checks beside the core ones.
const (
	CheckSubscribe      = "subscribe.task-first-in-order"
	CheckVersionRefused = "version.unserved-refused"
	// unservedVersion is an A2A version no agent serves.
	unservedVersion = "99.0"
)

var protocolTitles = map[string]string{
	CheckSubscribe:      "SubscribeToTask sends the task first, then its events in order, and ends with the task",
	CheckVersionRefused: "a request naming an A2A version the agent does not serve is refused with VersionNotSupported",
}

// checkVersion: the A2A-Version header names a version the agent does not
// serve. A SHOULD for tether: it only ever sends the version the card
// declares, and a2a-go's server (pkg/agentkit's) does not read the header.
func (r *runner) checkVersion(ctx context.Context) {
	id, what := CheckVersionRefused, protocolTitles[CheckVersionRefused]
	switch {
	case r.main == nil:
		r.record(id, what, Should, NotRun, "no usable interface within the agent's origins")
		return
	case r.card.Chosen.ProtocolVersion == a2a.ProtocolV03:
		r.record(id, what, Should, NotAdvertised, "A2A 0.3 names no version in its requests")
		return
	}
	_, ctxID := r.ids("version")
	err := r.main.ProbeVersion(ctx, ctxID+"-"+unknownTaskIDSuffix, unservedVersion)
	r.sawErr(err)
	_, reason := a2a.ErrorCode(err)
	switch {
	case reason == a2a.ReasonVersionNotSupported:
		r.record(id, what, Should, Pass, "A2A-Version %s: VersionNotSupported", unservedVersion)
	case err == nil:
		r.record(id, what, Should, Fail, "A2A-Version %s: answered a task for an id the check made up", unservedVersion)
	case a2a.IsTaskNotFound(err):
		r.record(id, what, Should, Fail, "A2A-Version %s was served: TaskNotFound for a made-up task, not VersionNotSupported", unservedVersion)
	default:
		r.record(id, what, Should, Fail, "A2A-Version %s: %s (want VersionNotSupported)", unservedVersion, describeErr(err))
	}
}

// checkSubscribe follows a working task, cancels it, and reads the stream
// to its end: the first event is the task, every event is about it,
// nothing follows the terminal state, and the stream then ends.
func (r *runner) checkSubscribe(ctx context.Context) {
	id, what := CheckSubscribe, protocolTitles[CheckSubscribe]
	chosen := r.card.Chosen
	switch {
	case !chosen.Streaming:
		r.record(id, what, Must, NotAdvertised, "the card does not declare streaming")
		return
	case r.main == nil:
		r.record(id, what, Must, NotRun, "no usable interface within the agent's origins")
		return
	case chosen.ProtocolVersion == a2a.ProtocolV03:
		r.record(id, what, Must, NotAdvertised, "A2A 0.3 has no SubscribeToTask; tether reads 0.3 tasks back")
		return
	case chosen.Binding == a2a.BindingGRPC:
		r.record(id, what, Must, Skipped, "tether does not stream over gRPC; it reads the task back")
		return
	}
	msgID, ctxID := r.ids("subscribe")
	t, ok := r.sendTask(ctx, id, what, NotRun, "",
		a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Long, MessageMetadata: r.safetyLease()})
	if !ok {
		return
	}
	if got, _ := r.waitFor(ctx, r.main, t.ID, r.opts.Within/3, notPending); got != nil && settled(got) {
		r.record(id, what, Must, NotRun, "the task was %s before it could be followed (text %q)", got.State, r.opts.Texts.Long)
		return
	}
	// Within for the first event, for the terminal state after the cancel,
	// and for the stream's end after it; the stream lives a little longer.
	sctx, stop := context.WithTimeout(ctx, 3*r.opts.Within+time.Second)
	defer stop()
	events := make(chan streamRead, 64)
	go func() {
		defer close(events)
		for ev, err := range r.main.Subscribe(sctx, t.ID) {
			select {
			case events <- streamRead{ev: ev, err: err}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	first, ok := r.nextEvent(events, r.opts.Now().Add(r.opts.Within))
	switch {
	case !ok:
		r.record(id, what, Must, Fail, "task %s: the stream sent nothing within %v", t.ID, r.opts.Within)
		return
	case first.err != nil:
		r.record(id, what, Must, Fail, "SubscribeToTask of working task %s: %s", t.ID, describeErr(first.err))
		return
	case !first.ev.Task || first.ev.TaskID != t.ID:
		r.record(id, what, Must, Fail, "the first event was %s, not task %s", describeEvent(first.ev), t.ID)
		return
	}
	if _, err := r.main.ProbeCancel(ctx, t.ID); err != nil {
		r.sawErr(err)
		r.record(id, what, Must, NotRun, "task %s followed; CancelTask to end it: %s", t.ID, describeErr(err))
		return
	}
	n, end := 1, a2a.State("")
	until := r.opts.Now().Add(r.opts.Within)
	for {
		rd, ok := r.nextEvent(events, until)
		switch {
		case !ok && end == "":
			// Only a task that did end must say so on its stream.
			if got, err := r.get(ctx, r.main, t.ID); err == nil && !got.State.Terminal() {
				r.record(id, what, Must, NotRun, "task %s followed, but it was still %s %v after CancelTask (see %s)",
					t.ID, got.State, r.opts.Within, CheckCancelWorking)
				return
			}
			r.record(id, what, Must, Fail, "task %s ended; its stream sent no terminal state within %v of CancelTask (%d events)", t.ID, r.opts.Within, n)
			return
		case !ok:
			r.record(id, what, Must, Fail, "task %s: the stream stayed open %v after the task was %s", t.ID, r.opts.Within, end)
			return
		case rd.closed && end == "":
			r.record(id, what, Must, Fail, "task %s: the stream ended after %d events without a terminal state", t.ID, n)
			return
		case rd.closed:
			r.record(id, what, Must, Pass, "task %s: the task first (%s), %d events in all, %s, then the stream ended", t.ID, first.ev.State, n, end)
			return
		case rd.err != nil:
			r.record(id, what, Must, Fail, "task %s: the stream broke after %d events: %s", t.ID, n, describeErr(rd.err))
			return
		case rd.ev.TaskID != t.ID:
			r.record(id, what, Must, Fail, "the stream of task %s sent an event of task %q", t.ID, rd.ev.TaskID)
			return
		case end != "":
			r.record(id, what, Must, Fail, "task %s: %s came after its terminal state %s", t.ID, describeEvent(rd.ev), end)
			return
		}
		n++
		if rd.ev.State.Terminal() {
			end, until = rd.ev.State, r.opts.Now().Add(r.opts.Within)
		}
	}
}

// streamRead is one read of a stream; closed marks its end.
type streamRead struct {
	ev     a2a.StreamEvent
	err    error
	closed bool
}

// nextEvent waits until a time for the stream's next read; ok is false
// when none came.
func (r *runner) nextEvent(events <-chan streamRead, until time.Time) (streamRead, bool) {
	select {
	case rd, open := <-events:
		if !open {
			return streamRead{closed: true}, true
		}
		return rd, true
	case <-time.After(until.Sub(r.opts.Now())):
		return streamRead{}, false
	}
}

func describeEvent(ev a2a.StreamEvent) string {
	switch {
	case ev.Task:
		return fmt.Sprintf("task %s (%s)", ev.TaskID, ev.State)
	case ev.State != a2a.StateUnknown:
		return fmt.Sprintf("a status update %s", ev.State)
	}
	return "an artifact or message event"
}
