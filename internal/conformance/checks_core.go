/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the core and list groups.
const (
	CheckInputRequired  = "input-required.keeps-task-id"
	CheckCancelWorking  = "cancel.working-task"
	CheckCancelFinished = "cancel.finished-task"
	CheckGetHistory     = "get.history-length"
	CheckListByContext  = "list.by-context"
	CheckListHistory    = "list.history-length"
)

// checkCore runs the core checks on the interface the operator would use.
func (r *runner) checkCore(ctx context.Context) {
	ids := []string{CheckInputRequired, CheckCancelWorking, CheckCancelFinished, CheckGetHistory}
	if r.main == nil {
		for _, id := range ids {
			r.record(id, coreTitles[id], Must, NotRun, "no usable interface within the agent's origins")
		}
		return
	}
	// Listed in a fixed order, run side by side.
	for _, id := range []string{CheckInputRequired, CheckCancelWorking, CheckSubscribe} {
		r.record(id, r.title(id), Must, NotRun, "did not finish")
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.checkInputRequired(ctx) })
	wg.Go(func() { r.checkCancelWorking(ctx) })
	wg.Go(func() { r.checkSubscribe(ctx) })
	wg.Wait()
	r.checkFinished(ctx)
	r.checkVersion(ctx)
}

var coreTitles = map[string]string{
	CheckInputRequired:  "a reply to input-required continues the same task",
	CheckCancelWorking:  "CancelTask of a working task reaches canceled in time",
	CheckCancelFinished: "CancelTask of a finished task leaves it as it was",
	CheckGetHistory:     "GetTask honours historyLength",
	CheckListByContext:  "ListTasks by context finds a task by its first message id",
	CheckListHistory:    "ListTasks honours historyLength",
}

func (r *runner) checkInputRequired(ctx context.Context) {
	id, what := CheckInputRequired, coreTitles[CheckInputRequired]
	msgID, ctxID := r.ids("ask")
	t, ok := r.sendTask(ctx, id, what, NotRun, "",
		a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Ask, MessageMetadata: r.safetyLease()})
	if !ok {
		return
	}
	got, ok := r.waitFor(ctx, r.main, t.ID, r.opts.Within, settled)
	if !ok || got.State != a2a.StateInputRequired {
		state := "no answer"
		if got != nil {
			state = string(got.State)
		}
		r.record(id, what, Must, NotRun, "the task did not ask for input (state %s) with text %q", state, r.opts.Texts.Ask)
		return
	}
	replyID := msgID + "-reply-0"
	ans, err := r.main.ProbeSend(ctx, a2a.ProbeSend{MessageID: replyID, ContextID: got.ContextID, TaskID: t.ID, Text: r.opts.Texts.Reply})
	r.sawErr(err)
	if err != nil {
		r.record(id, what, Must, Fail, "the reply to task %s was refused: %s", t.ID, describeErr(err))
		return
	}
	r.saw(ans)
	if ans.ID != t.ID {
		if ans.ID != "" && !ans.Message {
			r.mu.Lock()
			r.started[ans.ID] = r.main
			r.mu.Unlock()
		}
		r.record(id, what, Must, Fail, "the reply to task %s answered task %q", t.ID, ans.ID)
		return
	}
	end, ok := r.waitFor(ctx, r.main, t.ID, r.opts.Within, func(t *a2a.ProbeTask) bool { return t.State != a2a.StateInputRequired })
	if !ok {
		r.record(id, what, Must, Fail, "task %s still input-required after the reply", t.ID)
		return
	}
	r.record(id, what, Must, Pass, "task %s: input-required, reply, %s", t.ID, end.State)
}

func (r *runner) checkCancelWorking(ctx context.Context) {
	id, what := CheckCancelWorking, coreTitles[CheckCancelWorking]
	msgID, ctxID := r.ids("cancel")
	t, ok := r.sendTask(ctx, id, what, NotRun, "",
		a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Long, MessageMetadata: r.safetyLease()})
	if !ok {
		return
	}
	got, _ := r.waitFor(ctx, r.main, t.ID, r.opts.Within/3, notPending)
	if got != nil && settled(got) {
		r.record(id, what, Must, NotRun, "the task was %s before it could be cancelled (text %q)", got.State, r.opts.Texts.Long)
		return
	}
	start := r.opts.Now()
	ans, err := r.main.ProbeCancel(ctx, t.ID)
	r.sawErr(err)
	if err != nil {
		r.record(id, what, Must, Fail, "CancelTask of working task %s: %s", t.ID, describeErr(err))
		return
	}
	r.saw(ans)
	end, ok := r.waitFor(ctx, r.main, t.ID, r.opts.Within, terminal)
	switch {
	case !ok:
		r.record(id, what, Must, Fail, "task %s still %s %v after CancelTask", t.ID, end.State, r.opts.Within)
	case end.State != a2a.StateCanceled:
		r.record(id, what, Must, Fail, "task %s ended %s, not canceled", t.ID, end.State)
	default:
		r.record(id, what, Must, Pass, "task %s canceled %v after CancelTask", t.ID, r.opts.Now().Sub(start).Round(r.roundTo()))
	}
}

// checkFinished: cancelling the finished quick task leaves it as it was, and
// GetTask honours historyLength on it.
func (r *runner) checkFinished(ctx context.Context) {
	r.mu.Lock()
	q := r.quick
	r.mu.Unlock()
	if q == nil {
		r.record(CheckCancelFinished, coreTitles[CheckCancelFinished], Must, NotRun, "no task from the send check")
		r.record(CheckGetHistory, coreTitles[CheckGetHistory], Must, NotRun, "no task from the send check")
		return
	}
	done, ok := r.waitFor(ctx, r.main, q.id, r.opts.Within, terminal)
	if !ok {
		r.record(CheckCancelFinished, coreTitles[CheckCancelFinished], Must, NotRun, "the quick task %s did not finish (%s)", q.id, done.State)
	} else {
		r.checkCancelFinished(ctx, done)
	}
	r.checkGetHistory(ctx, q.id)
}

func (r *runner) checkCancelFinished(ctx context.Context, done *a2a.ProbeTask) {
	id, what := CheckCancelFinished, coreTitles[CheckCancelFinished]
	ans, err := r.main.ProbeCancel(ctx, done.ID)
	r.sawErr(err)
	_, reason := a2a.ErrorCode(err)
	switch {
	case err == nil && ans.State != done.State:
		r.record(id, what, Must, Fail, "CancelTask of %s task %s answered it %s", done.State, done.ID, ans.State)
		return
	case err != nil && reason != a2a.ReasonTaskNotCancelable:
		r.record(id, what, Must, Fail, "CancelTask of %s task %s: %s (want TaskNotCancelable or the task unchanged)", done.State, done.ID, describeErr(err))
		return
	}
	after, err := r.get(ctx, r.main, done.ID)
	if err != nil {
		r.record(id, what, Must, Fail, "GetTask after the cancel: %s", describeErr(err))
		return
	}
	if after.State != done.State {
		r.record(id, what, Must, Fail, "task %s was %s, is %s after CancelTask", done.ID, done.State, after.State)
		return
	}
	seen := "TaskNotCancelable"
	if err == nil && ans != nil {
		seen = "answered the task unchanged"
	}
	r.record(id, what, Must, Pass, "%s task %s: %s", done.State, done.ID, seen)
}

func (r *runner) checkGetHistory(ctx context.Context, taskID string) {
	id, what := CheckGetHistory, coreTitles[CheckGetHistory]
	zero, one := 0, 1
	t0, err := r.main.ProbeGet(ctx, taskID, &zero, false)
	r.sawErr(err)
	if err != nil {
		r.record(id, what, Must, Fail, "GetTask historyLength 0: %s", describeErr(err))
		return
	}
	t1, err := r.main.ProbeGet(ctx, taskID, &one, false)
	r.sawErr(err)
	if err != nil {
		r.record(id, what, Must, Fail, "GetTask historyLength 1: %s", describeErr(err))
		return
	}
	if t0.HistoryLength != 0 || t1.HistoryLength > 1 {
		r.record(id, what, Must, Fail, "historyLength 0 answered %d messages, 1 answered %d", t0.HistoryLength, t1.HistoryLength)
		return
	}
	r.record(id, what, Must, Pass, "historyLength 0: %d messages, 1: %d", t0.HistoryLength, t1.HistoryLength)
}

// checkList: the operator's look-up after a lost send answer finds the task
// by context and its first message id, within a small history.
func (r *runner) checkList(ctx context.Context) {
	if r.main == nil {
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, NotRun, "no usable interface within the agent's origins")
		return
	}
	if r.card.Chosen.ProtocolVersion == a2a.ProtocolV03 {
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, NotAdvertised, "A2A 0.3 has no ListTasks; the lease bounds a lost send")
		r.record(CheckListHistory, coreTitles[CheckListHistory], Must, NotAdvertised, "A2A 0.3 has no ListTasks")
		return
	}
	r.mu.Lock()
	q := r.quick
	r.mu.Unlock()
	if q == nil {
		msgID, ctxID := r.ids("list")
		t, err := r.send(ctx, r.main, a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Quick})
		if err != nil || t.Message {
			r.record(CheckListByContext, coreTitles[CheckListByContext], Should, NotRun, "no task to look up")
			return
		}
		q = &sentTask{id: t.ID, msgID: msgID, ctxID: ctxID}
	}
	// tether asks for 8 messages of history to find its own message ids.
	tasks, err := r.main.ProbeList(ctx, q.ctxID, 8)
	r.sawErr(err)
	if err != nil {
		seen := describeErr(err)
		// An agent that does not list tasks for this caller breaks the
		// SHOULD; the history rule of a listing it does not give is moot.
		history, historySeen := NotRun, "ListTasks did not answer"
		if errors.Is(err, a2a.ErrCannotList) {
			seen = "this caller cannot list: " + seen + "; tether cannot adopt a task whose send answer was lost"
			history, historySeen = NotAdvertised, "the agent does not list tasks for this caller (see "+CheckListByContext+")"
		}
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, Fail, "%s", seen)
		r.record(CheckListHistory, coreTitles[CheckListHistory], Must, history, "%s", historySeen)
		return
	}
	for _, t := range tasks {
		r.saw(t)
	}
	i := slices.IndexFunc(tasks, func(t *a2a.ProbeTask) bool { return t.ID == q.id })
	switch {
	case i < 0:
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, Fail, "%d tasks in context %s, not task %s", len(tasks), q.ctxID, q.id)
	case !slices.Contains(tasks[i].MessageIDs, q.msgID):
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, Fail,
			"task %s found, but its history (historyLength 8) does not hold message %s", q.id, q.msgID)
	default:
		r.record(CheckListByContext, coreTitles[CheckListByContext], Should, Pass, "task %s found by message %s", q.id, q.msgID)
	}
	var over []string
	for _, h := range []int{0, 1} {
		ts, err := r.main.ProbeList(ctx, q.ctxID, h)
		r.sawErr(err)
		if err != nil {
			r.record(CheckListHistory, coreTitles[CheckListHistory], Must, Fail, "ListTasks historyLength %d: %s", h, describeErr(err))
			return
		}
		for _, t := range ts {
			if t.HistoryLength > h {
				over = append(over, "historyLength "+itoa(h)+" answered "+itoa(t.HistoryLength)+" messages")
			}
		}
	}
	if len(over) > 0 {
		r.record(CheckListHistory, coreTitles[CheckListHistory], Must, Fail, "%s", over[0])
		return
	}
	r.record(CheckListHistory, coreTitles[CheckListHistory], Must, Pass, "historyLength 0 and 1 honoured")
}
