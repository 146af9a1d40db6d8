/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// MessageIDPrefix starts every message id and context id a run sends, so
// an agent's operator can tell the check's tasks from real ones.
const MessageIDPrefix = "tether-check-"

// pollEvery is how often a task is read while waiting for a state.
const pollEvery = 200 * time.Millisecond

// Where extension data was found, for the report.
const (
	whereTaskMetadata  = "task metadata"
	whereStatusMessage = "status message"
)

// Expected outcomes of a send vector.
const (
	outcomeAccepted = "accepted"
	outcomeRefused  = "refused"
)

// runner is one run: the options, the clients, what was seen.
type runner struct {
	opts  Options
	start time.Time
	card  *a2a.CardDetails
	// main is the client for the interface the operator would choose.
	main a2a.Prober

	seq atomic.Int64

	mu      sync.Mutex
	results map[string]Result
	order   []string
	// started holds every task the run created, and the client it lives
	// behind, so the run can cancel what is left.
	started map[string]a2a.Prober
	settled map[string]bool
	probers []a2a.Prober
	// quick is the task sent on the main interface by the send-get check.
	quick *sentTask
	// answers to first sends: tasks started and messages instead
	tasksAnswered, messagesAnswered int
	// bounds seen over the whole run
	longestID   int
	largestBody int64
	idErrors    []string
	sizeErrors  []string
	schemaErrs  []string
}

// Run checks the agent at opts.Endpoint and returns the report. The error is
// for a run that could not start (bad options); everything about the agent
// is in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts.defaults()
	if opts.RunID == "" {
		opts.RunID = strings.ToLower(rand.Text()[:10])
	}
	r := &runner{opts: opts, start: opts.Now(), results: map[string]Result{},
		started: map[string]a2a.Prober{}, settled: map[string]bool{}}
	ep, err := withHTTPClient(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	r.opts.Endpoint = ep
	defer r.cleanup(ctx)

	r.checkCard(ctx)
	if r.card != nil {
		if r.wants(GroupCore) {
			r.checkCore(ctx)
		}
		if r.wants(GroupList) {
			r.checkList(ctx)
		}
		if r.wants(GroupPush) {
			r.checkPush(ctx)
		}
		// The extension checks wait on clocks (ttls, deadlines): they run
		// side by side, their rows listed in a fixed order.
		var wg sync.WaitGroup
		if r.wants(GroupLease) {
			r.placeholders(leaseOrder, leaseTitles)
			wg.Go(func() { r.checkLease(ctx) })
		}
		if r.wants(GroupBudget) {
			r.placeholders(budgetOrder, budgetTitles)
			wg.Go(func() { r.checkBudget(ctx) })
		}
		wg.Wait()
	}
	if r.wants(GroupBounds) {
		r.checkBounds()
	}
	return r.report(), nil
}

func (r *runner) wants(group string) bool { return slices.Contains(r.opts.Groups, group) }

// record sets the result of a check; ids are listed in the order first recorded.
func (r *runner) record(id, check string, level Level, status Status, seen string, args ...any) {
	if len(args) > 0 {
		seen = fmt.Sprintf(seen, args...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.results[id]; !ok {
		r.order = append(r.order, id)
	}
	r.results[id] = Result{ID: id, TCK: tckIDs(id), Check: check, Level: level, Status: status, Seen: seen}
}

func (r *runner) report() *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &Report{URL: r.opts.Endpoint.URL, RunID: r.opts.RunID, Started: r.start.UTC().Format(time.RFC3339),
		Duration: r.opts.Now().Sub(r.start).Round(100 * time.Millisecond).String()}
	if r.card != nil {
		rep.Agent = r.card.Name
	}
	for _, id := range r.order {
		rep.Results = append(rep.Results, r.results[id])
	}
	rep.MessageOnly = r.messagesAnswered > 0 && r.tasksAnswered == 0
	rep.Verdict = Judge(rep.Results, rep.MessageOnly)
	return rep
}

// ids returns a fresh message id and a context id for one task.
func (r *runner) ids(purpose string) (msgID, ctxID string) {
	n := r.seq.Add(1)
	base := fmt.Sprintf("%s%s-%d", MessageIDPrefix, r.opts.RunID, n)
	return base + "-" + purpose, base + "-ctx"
}

// sendTask sends req for a MUST check at the main interface and returns the task
// it started. When there is none, the check is recorded and ok is false: as
// refused (with what the send asked for) when the agent refused the send,
// NotRun when it answered with a message.
func (r *runner) sendTask(ctx context.Context, id, what string, refused Status, asked string,
	req a2a.ProbeSend) (t *a2a.ProbeTask, ok bool) {
	t, err := r.send(ctx, r.main, req)
	switch {
	case err != nil:
		r.record(id, what, Must, refused, "SendMessage%s: %s", asked, describeErr(err))
		return nil, false
	case t.Message:
		r.record(id, what, Must, NotRun, "answered with a message, no task: tether cannot follow its work")
		return nil, false
	}
	return t, true
}

// send sends a first message and remembers the task it started.
// Extension data is always announced with its extension.
func (r *runner) send(ctx context.Context, p a2a.Prober, req a2a.ProbeSend) (*a2a.ProbeTask, error) {
	for _, uri := range []string{a2a.LeaseExtensionURI, a2a.BudgetExtensionURI} {
		_, inMsg := req.MessageMetadata[uri]
		_, inReq := req.RequestMetadata[uri]
		if (inMsg || inReq) && !slices.Contains(req.Extensions, uri) {
			req.Extensions = append(req.Extensions, uri)
		}
	}
	t, err := p.ProbeSend(ctx, req)
	r.sawErr(err)
	if err != nil {
		return nil, err
	}
	r.saw(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Message {
		r.messagesAnswered++
		return t, nil
	}
	r.tasksAnswered++
	if t.ID != "" {
		r.started[t.ID] = p
	}
	return t, nil
}

// get reads a task without renewing and without history.
func (r *runner) get(ctx context.Context, p a2a.Prober, id string) (*a2a.ProbeTask, error) {
	zero := 0
	t, err := p.ProbeGet(ctx, id, &zero, false)
	r.sawErr(err)
	if err == nil {
		r.saw(t)
	}
	return t, err
}

// waitFor reads the task until cond holds or the bound passes; it returns
// the last task read.
func (r *runner) waitFor(ctx context.Context, p a2a.Prober, id string, within time.Duration, cond func(*a2a.ProbeTask) bool) (*a2a.ProbeTask, bool) {
	deadline := r.opts.Now().Add(within)
	var last *a2a.ProbeTask
	for {
		t, err := r.get(ctx, p, id)
		if err == nil {
			last = t
			if cond(t) {
				return t, true
			}
		}
		if !r.opts.Now().Before(deadline) || ctx.Err() != nil {
			return last, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}

func settled(t *a2a.ProbeTask) bool    { return t.State.Terminal() || t.State.Interrupted() }
func terminal(t *a2a.ProbeTask) bool   { return t.State.Terminal() }
func notPending(t *a2a.ProbeTask) bool { return t.State != a2a.StateSubmitted }

// saw records what a task answer shows about bounds and schemas.
func (r *runner) saw(t *a2a.ProbeTask) {
	if t == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.longestID = max(r.longestID, len(t.ID), len(t.ContextID))
	if t.State.Terminal() {
		r.settled[t.ID] = true
	}
	for _, c := range []struct {
		where, uri, schema string
		meta               map[string]any
	}{
		{whereTaskMetadata, a2a.LeaseExtensionURI, SchemaLeaseAnswer, t.Metadata},
		{whereTaskMetadata, a2a.BudgetExtensionURI, SchemaBudgetReport, t.Metadata},
		{whereStatusMessage + " metadata", a2a.BudgetExtensionURI, SchemaBudgetReport, t.StatusMetadata},
	} {
		raw, ok := c.meta[c.uri]
		if !ok {
			continue
		}
		if err := Validate(c.schema, raw); err != nil {
			r.schemaErrs = append(r.schemaErrs, fmt.Sprintf("%s in %s of task %s: %v", c.uri, c.where, t.ID, err))
		}
	}
	if fc, ok := t.StatusMetadata[a2a.FailureClassMetadataKey]; ok {
		if err := Validate(SchemaFailureClass, fc); err != nil {
			r.schemaErrs = append(r.schemaErrs, fmt.Sprintf("failureClass of task %s: %v", t.ID, err))
		}
	}
}

// sawErr records bound violations among call errors.
func (r *runner) sawErr(err error) {
	if err == nil {
		return
	}
	_, reason := a2a.ErrorCode(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case errors.Is(err, a2a.ErrResponseTooLarge):
		r.sizeErrors = append(r.sizeErrors, err.Error())
	case reason == a2a.ReasonInvalidAgentResponse:
		r.idErrors = append(r.idErrors, err.Error())
	}
}

// cleanup cancels every task the run started that it did not see end.
func (r *runner) cleanup(ctx context.Context) {
	r.mu.Lock()
	left := map[string]a2a.Prober{}
	for id, p := range r.started {
		if !r.settled[id] {
			left[id] = p
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Within)
	defer cancel()
	var wg sync.WaitGroup
	for id, p := range left {
		wg.Go(func() { _, _ = p.ProbeCancel(ctx, id) })
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.probers {
		p.Close()
	}
}

// describeErr is an error as the report shows it.
func describeErr(err error) string {
	code, reason := a2a.ErrorCode(err)
	switch {
	case reason != "" && code != 0:
		return fmt.Sprintf("%s (%d)", reason, code)
	case reason != "":
		return reason + ": " + firstLine(err.Error())
	}
	return firstLine(err.Error())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func itoa(n int) string { return fmt.Sprint(n) }

// roundTo is how precisely durations are shown.
func (r *runner) roundTo() time.Duration { return 100 * time.Millisecond }

// safetyLease is lease data for tasks the checks leave running: when the
// agent grants leases, an unrenewed lease bounds a task the check could not
// cancel. Nil when the card declares no lease.
func (r *runner) safetyLease() map[string]any {
	if _, ok := r.card.Extensions[a2a.LeaseExtensionURI]; !ok {
		return nil
	}
	ttl := min(60, r.maxTTLSeconds())
	return map[string]any{a2a.LeaseExtensionURI: map[string]any{"ttlSeconds": ttl}}
}

// placeholders lists checks in their order before they run concurrently.
func (r *runner) placeholders(order []string, titles map[string]string) {
	for _, id := range order {
		r.record(id, titles[id], Must, NotRun, "did not finish")
	}
}
