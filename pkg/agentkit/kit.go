/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Option configures a Kit (and the Server built on it).
type Option func(*Kit)

// WithMaxLeaseTTL sets the longest lease the agent grants (default 1h).
func WithMaxLeaseTTL(d time.Duration) Option { return func(k *Kit) { k.maxTTL = d } }

// WithLeaseStore shares leases, e.g. between replicas (default: in memory).
func WithLeaseStore(s LeaseStore) Option { return func(k *Kit) { k.leases = s } }

// WithClock replaces the wall clock (k8s.io/utils/clock; tests pass a
// clock/testing FakeClock to move leases and deadlines).
func WithClock(c clock.PassiveClock) Option { return func(k *Kit) { k.clock = c } }

// WithSweepInterval sets how often lapsed leases are looked for (default 1s).
func WithSweepInterval(d time.Duration) Option { return func(k *Kit) { k.sweepEvery = d } }

// WithLogger sets the logger for the kit and the a2a-go handler it builds.
func WithLogger(l *slog.Logger) Option { return func(k *Kit) { k.logger = l } }

// WithHandlerOptions passes options to a2asrv.NewHandler in NewServer, e.g.
// a2asrv.WithTaskStore for a shared task store.
func WithHandlerOptions(opts ...a2asrv.RequestHandlerOption) Option {
	return func(k *Kit) { k.handlerOpts = append(k.handlerOpts, opts...) }
}

// WithOrigins names the origins (scheme://host[:port]) under which the
// operator reaches this agent: every URL Agents use for it. A claim is
// proven only for a Delegation whose Agent's endpoint is at one of them
// (see the package documentation). NewServer defaults to the origins of the
// card's supportedInterfaces; a URL that is not http(s) is ignored.
func WithOrigins(urls ...string) Option {
	return func(k *Kit) { k.rawOrigins = append(k.rawOrigins, urls...) }
}

// WithEventRecorder records a Warning Event on a Delegation sent to this
// agent when a claim on it is refused, or a child name it needs is taken.
// The agent's identity then needs create on events.k8s.io events.
func WithEventRecorder(r events.EventRecorder) Option { return func(k *Kit) { k.recorder = r } }

// Kit implements the lease and budget extensions for an a2a-go server. Use
// NewServer, or wire the parts into your own a2asrv handler: Executor wraps
// the agent, Interceptor goes into a2asrv.WithCallInterceptors, Extensions
// into the card, Sweep runs next to the handler, and with WithTokenReview
// Authenticate wraps the protocol's HTTP handlers.
type Kit struct {
	maxTTL      time.Duration
	leases      LeaseStore
	clock       clock.PassiveClock
	sweepEvery  time.Duration
	logger      *slog.Logger
	handlerOpts []a2asrv.RequestHandlerOption
	rawOrigins  []string
	origins     []string // normalised by Origin
	recorder    events.EventRecorder
	cardKey     *jose.JSONWebKey
	reviews     TokenReviewer
	audience    string
	operator    string // the only caller whose claims are proven; "" for any
	reviewed    reviewCache

	mu      sync.Mutex
	budgets map[a2a.TaskID]*Budget
}

// New returns a Kit.
func New(opts ...Option) *Kit {
	k := &Kit{
		maxTTL:     tethera2a.MaxLeaseTTL,
		clock:      clock.RealClock{},
		sweepEvery: time.Second,
		logger:     slog.Default(),
		budgets:    map[a2a.TaskID]*Budget{},
	}
	for _, o := range opts {
		o(k)
	}
	if k.leases == nil {
		k.leases = NewMemoryLeaseStore()
	}
	if k.sweepEvery <= 0 {
		k.sweepEvery = time.Second
	}
	k.addOrigins(k.rawOrigins...)
	return k
}

// addOrigins adds the origins of urls to the kit's own, skipping what is not
// an http(s) URL.
func (k *Kit) addOrigins(urls ...string) {
	for _, u := range urls {
		o, err := Origin(u)
		if err != nil {
			k.logger.Warn("ignoring an origin that is not an http(s) URL", "url", u, "error", err)
			continue
		}
		if !slices.Contains(k.origins, o) {
			k.origins = append(k.origins, o)
		}
	}
}

// Origins are the kit's own origins, as the claim check compares them.
func (k *Kit) Origins() []string { return slices.Clone(k.origins) }

// Executor wraps an agent's executor: it grants leases, puts the Budget and
// the current Delegation into the context, stops the task at the budget
// deadline, and reports the budget on every status update.
func (k *Kit) Executor(inner a2asrv.AgentExecutor) a2asrv.AgentExecutor {
	return &executor{kit: k, inner: inner}
}

// Extensions are the card entries declaring the kit's extensions: lease,
// budget, and the trace context in the message metadata (the kit reads it
// from there when a request came without a traceparent header).
func (k *Kit) Extensions() []a2a.AgentExtension {
	return []a2a.AgentExtension{
		{
			URI:         tethera2a.LeaseExtensionURI,
			Description: "Tasks live while the client renews a lease (GetTask with the extension activated).",
			Params:      map[string]any{"maxTTLSeconds": k.maxTTL.Seconds()},
		},
		{
			URI:         tethera2a.BudgetExtensionURI,
			Description: "Tasks honour a granted budget and deadline and report what is left and spent.",
		},
		{
			URI:         tethera2a.TraceContextExtensionURI,
			Description: "Tasks continue the W3C trace context (traceparent) of the message metadata when no header carries one.",
		},
	}
}

// budget returns the in-memory limit of a task; nil when unknown.
func (k *Kit) budget(id a2a.TaskID) *Budget {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.budgets[id]
}

// budgetFor finds or creates the budget of the task an execution works on.
// A reply to a task keeps the budget granted with its first message; after a
// restart with a persistent task store it is rebuilt from that message and
// the last report.
func (k *Kit) budgetFor(ec *a2asrv.ExecutorContext) (*Budget, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if b, ok := k.budgets[ec.TaskID]; ok {
		return b, nil
	}
	req, err := budgetRequest(ec.Message, ec.Metadata)
	if err != nil {
		return nil, err
	}
	var spent map[string]int64
	if t := ec.StoredTask; t != nil {
		if req == nil && len(t.History) > 0 {
			req, _ = budgetRequest(t.History[0], nil)
		}
		var last tethera2a.BudgetReportMetadata
		if raw, ok := t.Metadata[tethera2a.BudgetExtensionURI]; ok && fromMeta(raw, &last) == nil {
			spent = last.Spent
		}
	}
	var b *Budget
	if req == nil {
		b = newBudget(false, nil, spent, time.Time{})
	} else {
		var deadline time.Time
		if req.Deadline != nil {
			deadline = *req.Deadline
		}
		// Without "meters" the grant is a deadline only; metered spend is unlimited.
		b = newBudget(req.Meters != nil, req.Meters, spent, deadline)
	}
	k.budgets[ec.TaskID] = b
	return b, nil
}

// budgetRequest reads the budget a message grants; nil when none.
func budgetRequest(msg *a2a.Message, reqMeta map[string]any) (*tethera2a.BudgetRequestMetadata, error) {
	raw, ok := extensionData(msg, reqMeta, tethera2a.BudgetExtensionURI)
	if !ok {
		return nil, nil
	}
	var req tethera2a.BudgetRequestMetadata
	if err := fromMeta(raw, &req); err != nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "budget extension metadata: "+err.Error())
	}
	for m, n := range req.Meters {
		if n < 0 {
			return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("budget meter %q is negative", m))
		}
	}
	return &req, nil
}
