/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the lease group.
const (
	CheckLeaseRefuses   = "lease.refuses-invalid"
	CheckLeaseGrants    = "lease.grants"
	CheckLeaseRenewal   = "lease.renewal"
	CheckLeasePlainGet  = "lease.plain-get-does-not-renew"
	CheckLeaseLapse     = "lease.lapse-stops-task"
	leaseAnswerSlack    = 2 * time.Second
	leaseVectorFileName = "lease-v1.send.json"
)

var leaseTitles = map[string]string{
	CheckLeaseRefuses:  "an invalid lease or a ttl out of range is refused with InvalidParams, nothing started",
	CheckLeaseGrants:   "a valid lease is granted: expiresAt = now + ttl",
	CheckLeaseRenewal:  "GetTask with the lease extension renews the lease",
	CheckLeasePlainGet: "GetTask without the extension renews nothing",
	CheckLeaseLapse:    "a lapsed lease stops the task within one ttl",
}

var leaseOrder = []string{CheckLeaseRefuses, CheckLeaseGrants, CheckLeaseRenewal, CheckLeasePlainGet, CheckLeaseLapse}

func (r *runner) checkLease(ctx context.Context) {
	if !r.extensionCheckable(a2a.LeaseExtensionURI, leaseOrder, leaseTitles) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.runSendVectors(ctx, a2a.LeaseExtensionURI, CheckLeaseRefuses, CheckLeaseGrants) })
	wg.Go(func() { r.checkLeaseRenewal(ctx) })
	wg.Go(func() { r.checkLeaseLapse(ctx) })
	wg.Wait()
}

// leaseSend sends the long text with a lease of the run's ttl.
func (r *runner) leaseSend(ctx context.Context, purpose string) (*a2a.ProbeTask, error) {
	msgID, ctxID := r.ids(purpose)
	ttl := r.opts.LeaseTTL.Seconds()
	t, err := r.send(ctx, r.main, a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Long,
		MessageMetadata: map[string]any{a2a.LeaseExtensionURI: map[string]any{"ttlSeconds": ttl}}})
	if err == nil && t.Message {
		err = fmt.Errorf("answered with a message, no task")
	}
	return t, err
}

func (r *runner) checkLeaseRenewal(ctx context.Context) {
	ttl := r.opts.LeaseTTL
	t, err := r.leaseSend(ctx, "renew")
	if err != nil {
		r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail, "SendMessage with ttl %v: %s", ttl, describeErr(err))
		r.record(CheckLeasePlainGet, leaseTitles[CheckLeasePlainGet], Must, NotRun, "no leased task")
		return
	}
	if t.LeaseExpiresAt.IsZero() {
		r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail, "task %s was not granted a lease (no expiresAt)", t.ID)
		r.record(CheckLeasePlainGet, leaseTitles[CheckLeasePlainGet], Must, NotRun, "no leased task")
		return
	}
	// A plain GetTask first: it must not move the expiry.
	sleep(ctx, ttl/3)
	plain, err := r.get(ctx, r.main, t.ID)
	switch {
	case err != nil:
		r.record(CheckLeasePlainGet, leaseTitles[CheckLeasePlainGet], Must, Fail, "GetTask: %s", describeErr(err))
	case !plain.LeaseExpiresAt.Equal(t.LeaseExpiresAt):
		r.record(CheckLeasePlainGet, leaseTitles[CheckLeasePlainGet], Must, Fail,
			"expiresAt moved from %s to %s on a GetTask without the extension", stamp(t.LeaseExpiresAt), stamp(plain.LeaseExpiresAt))
	default:
		r.record(CheckLeasePlainGet, leaseTitles[CheckLeasePlainGet], Must, Pass, "expiresAt stayed %s", stamp(t.LeaseExpiresAt))
	}
	// Renew every ttl/3 for two ttls: the task must outlive its first expiry.
	first := t.LeaseExpiresAt
	last := first
	renewals := 0
	for end := r.opts.Now().Add(2 * ttl); r.opts.Now().Before(end); {
		zero := 0
		got, err := r.main.ProbeGet(ctx, t.ID, &zero, true)
		r.sawErr(err)
		if err != nil {
			r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail, "renewal %d: %s", renewals+1, describeErr(err))
			return
		}
		r.saw(got)
		renewals++
		if settled(got) {
			r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail,
				"task %s %s after %d renewals every %v (ttl %v)", t.ID, got.State, renewals, ttl/3, ttl)
			return
		}
		if want := r.opts.Now().Add(ttl - leaseAnswerSlack); got.LeaseExpiresAt.Before(want) || got.LeaseExpiresAt.Before(last) {
			r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail,
				"renewal %d answered expiresAt %s (before: %s; now + ttl: %s)", renewals, stamp(got.LeaseExpiresAt), stamp(last), stamp(r.opts.Now().Add(ttl)))
			return
		}
		last = got.LeaseExpiresAt
		sleep(ctx, ttl/3)
	}
	got, err := r.get(ctx, r.main, t.ID)
	if err != nil || settled(got) {
		r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Fail, "task %s did not outlive its renewed lease", t.ID)
		return
	}
	r.record(CheckLeaseRenewal, leaseTitles[CheckLeaseRenewal], Must, Pass,
		"task %s still %s after %d renewals over %v (ttl %v), expiresAt %s → %s", t.ID, got.State, renewals, 2*ttl, ttl, stamp(first), stamp(last))
	r.cancelQuietly(ctx, t.ID)
}

func (r *runner) checkLeaseLapse(ctx context.Context) {
	ttl := r.opts.LeaseTTL
	t, err := r.leaseSend(ctx, "lapse")
	if err != nil {
		r.record(CheckLeaseLapse, leaseTitles[CheckLeaseLapse], Must, Fail, "SendMessage with ttl %v: %s", ttl, describeErr(err))
		return
	}
	if t.LeaseExpiresAt.IsZero() {
		r.record(CheckLeaseLapse, leaseTitles[CheckLeaseLapse], Must, Fail, "task %s was not granted a lease (no expiresAt)", t.ID)
		return
	}
	bound := t.LeaseExpiresAt.Add(ttl)
	end, ok := r.waitFor(ctx, r.main, t.ID, bound.Sub(r.opts.Now()), terminal)
	switch {
	case !ok:
		r.record(CheckLeaseLapse, leaseTitles[CheckLeaseLapse], Must, Fail,
			"task %s still %s one ttl (%v) after its lease lapsed at %s", t.ID, end.State, ttl, stamp(t.LeaseExpiresAt))
	case end.State != a2a.StateCanceled:
		r.record(CheckLeaseLapse, leaseTitles[CheckLeaseLapse], Must, Fail, "task %s ended %s, not canceled", t.ID, end.State)
	default:
		after := r.opts.Now().Sub(t.LeaseExpiresAt).Round(r.roundTo())
		r.record(CheckLeaseLapse, leaseTitles[CheckLeaseLapse], Must, Pass,
			"task %s canceled %v after expiresAt (ttl %v): %q", t.ID, max(after, 0), ttl, end.StatusText)
	}
}

// runSendVectors runs the send vectors of one extension that apply to this
// agent (the agent's declared maximum ttl) against the live agent: refusals
// must be InvalidParams with nothing started, grants as the vector says.
func (r *runner) runSendVectors(ctx context.Context, uri, refusedID, acceptedID string) {
	files, err := LoadVectors()
	if err != nil {
		r.record(refusedID, r.title(refusedID), Must, NotRun, "loading the vectors: %v", err)
		return
	}
	var refusedFail, acceptedFail, refusedPass, acceptedPass []string
	canList := r.card.Chosen.ProtocolVersion != a2a.ProtocolV03
	for _, f := range files {
		if f.Extension != uri {
			continue
		}
		for _, v := range f.Vectors {
			if v.Kind != KindSend || (v.Agent != nil && v.Agent.MaxTTLSeconds != r.maxTTLSeconds()) {
				continue
			}
			if v.Expect.Outcome == outcomeAccepted && !v.AnyExecutor && v.Expect.Lease == nil && !v.Expect.LeaseNone {
				continue // it needs the harness executor
			}
			problem := r.runSendVector(ctx, v, uri, canList)
			switch {
			case v.Expect.Outcome == outcomeRefused && problem != "":
				refusedFail = append(refusedFail, v.Name+": "+problem)
			case v.Expect.Outcome == outcomeRefused:
				refusedPass = append(refusedPass, v.Name)
			case problem != "":
				acceptedFail = append(acceptedFail, v.Name+": "+problem)
			default:
				acceptedPass = append(acceptedPass, v.Name)
			}
		}
	}
	verdict := func(id string, fails, passes []string) {
		switch {
		case len(fails) > 0:
			r.record(id, r.title(id), Must, Fail, "%d of %d vectors failed: %s", len(fails), len(fails)+len(passes), strings.Join(fails, "; "))
		case len(passes) == 0:
			r.record(id, r.title(id), Must, NotRun, "no vector applies")
		default:
			seen := fmt.Sprintf("%d vectors: %s", len(passes), strings.Join(passes, ", "))
			if id == refusedID && !canList {
				seen += " (that nothing started is not verifiable: A2A 0.3 has no ListTasks)"
			}
			r.record(id, r.title(id), Must, Pass, "%s", seen)
		}
	}
	verdict(refusedID, refusedFail, refusedPass)
	verdict(acceptedID, acceptedFail, acceptedPass)
}

// runSendVector returns what went wrong, "" when the agent did as the vector says.
func (r *runner) runSendVector(ctx context.Context, v Vector, uri string, canList bool) string {
	msgID, ctxID := r.ids("vector")
	req := a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Quick, Extensions: []string{uri}}
	if v.Message != nil {
		req.MessageMetadata = v.Message.Metadata
	}
	if v.Request != nil {
		req.RequestMetadata = v.Request.Metadata
	}
	sentAt := r.opts.Now()
	t, err := r.send(ctx, r.main, req)
	if v.Expect.Outcome == outcomeRefused {
		if err == nil {
			return fmt.Sprintf("accepted (task %s), want InvalidParams", t.ID)
		}
		code, reason := a2a.ErrorCode(err)
		if reason != a2a.ReasonInvalidParams && code != v.Expect.Error.Code {
			return "refused with " + describeErr(err) + ", want InvalidParams (-32602)"
		}
		if canList {
			if tasks, err := r.main.ProbeList(ctx, ctxID, 0); err == nil && len(tasks) > 0 {
				for _, t := range tasks {
					r.mu.Lock()
					r.started[t.ID] = r.main
					r.mu.Unlock()
				}
				return fmt.Sprintf("refused, but started task %s", tasks[0].ID)
			}
		}
		return ""
	}
	if err != nil {
		return "refused: " + describeErr(err)
	}
	if t.Message {
		return "answered with a message, no task"
	}
	switch {
	case v.Expect.LeaseNone && !t.LeaseExpiresAt.IsZero():
		return "granted a lease nobody asked for"
	case v.Expect.Lease != nil:
		if _, ok := t.Metadata[a2a.LeaseExtensionURI]; !ok {
			return "no lease answer in the task metadata"
		}
		want := sentAt.Add(seconds(v.Expect.Lease.ExpiresInSeconds))
		if d := t.LeaseExpiresAt.Sub(want); math.Abs(float64(d)) > float64(leaseAnswerSlack) {
			return fmt.Sprintf("expiresAt %s, want about %s", stamp(t.LeaseExpiresAt), stamp(want))
		}
	}
	if s := v.Expect.Settle; s != nil && v.AnyExecutor {
		end, ok := r.waitFor(ctx, r.main, t.ID, r.opts.Within, terminal)
		if !ok {
			return fmt.Sprintf("still %s after %v, want %s", end.State, r.opts.Within, s.State)
		}
		if want := a2a.ParseState(s.State); end.State != want {
			return fmt.Sprintf("ended %s, want %s", end.State, want)
		}
		if s.FailureClass != "" && end.FailureClass != s.FailureClass {
			return fmt.Sprintf("failure class %q, want %q", end.FailureClass, s.FailureClass)
		}
	}
	return ""
}

func (r *runner) title(id string) string {
	for _, titles := range []map[string]string{leaseTitles, budgetTitles, coreTitles, protocolTitles} {
		if t, ok := titles[id]; ok {
			return t
		}
	}
	return id
}

// cancelQuietly cancels a task the check no longer needs.
func (r *runner) cancelQuietly(ctx context.Context, id string) {
	if _, err := r.main.ProbeCancel(ctx, id); err == nil {
		r.mu.Lock()
		r.settled[id] = true
		r.mu.Unlock()
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("15:04:05.000")
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// extensionCheckable tells whether an extension's checks can run: the card
// declares it and an interface is usable. Otherwise every check of the
// extension is recorded as not advertised or not run.
func (r *runner) extensionCheckable(uri string, order []string, titles map[string]string) bool {
	var status Status
	var seen string
	switch {
	case !r.declares(uri):
		status, seen = NotAdvertised, "the card does not declare "+uri
	case r.main == nil:
		status, seen = NotRun, "no usable interface within the agent's origins"
	default:
		return true
	}
	for _, id := range order {
		r.record(id, titles[id], Must, status, "%s", seen)
	}
	return false
}

func (r *runner) declares(uri string) bool {
	_, ok := r.card.Extensions[uri]
	return ok
}
