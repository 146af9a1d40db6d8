/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package conformance checks an A2A agent against what tether asks of it
// (kubectl tether check-agent): the card and its signature, the core calls
// on every binding its card lists, cancellation reaching the task,
// SubscribeToTask and push delivery when the card declares them, the refusal
// of an A2A version it does not serve, look-up by context, history bounds,
// and the lease and budget extensions (docs/extensions.md) when the card
// declares them. An agent is conformant only when every MUST that applies
// ran and passed (Judge). The wire is internal/a2a's; this package only
// decides what to send and whether the answers keep the rules.
package conformance

import (
	"slices"
	"time"

	"github.com/tether-dev/tether/internal/a2a"
)

// Level is how binding a rule is (RFC 2119).
type Level string

const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
	May    Level = "MAY"
)

// Status is what a check found.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// NotAdvertised: the card does not declare what the check is about
	// (an extension, ListTasks on a 0.3 agent).
	NotAdvertised Status = "not advertised"
	// NotRun: the check applies but could not run: the agent answered
	// with a message instead of a task, refused the send, never reached
	// the state the check needs with the texts given, or an earlier check
	// failed. A MUST not run leaves the agent not conformant: nothing
	// showed it keeps the rule.
	NotRun Status = "not run"
	// Skipped: the check does not apply to this run for a reason on the
	// checker's side (a binding tether does not speak); it counts for
	// nothing.
	Skipped Status = "skipped"
)

// Result is one row of the report.
type Result struct {
	ID string `json:"id"`
	// TCK are the requirement ids of the A2A TCK (a2aproject/a2a-tck) the
	// check matches, when it matches any.
	TCK    []string `json:"tck,omitempty"`
	Check  string   `json:"check"`
	Level  Level    `json:"level"`
	Status Status   `json:"status"`
	Seen   string   `json:"seen"`
}

// Report is what a run found.
type Report struct {
	Agent    string `json:"agent"`
	URL      string `json:"url"`
	RunID    string `json:"runID"`
	Started  string `json:"started"`
	Duration string `json:"duration"`
	// MessageOnly is set when the agent answered every send that should
	// have started a task with a message: tether cannot follow its work.
	MessageOnly bool     `json:"messageOnly,omitempty"`
	Verdict     Verdict  `json:"verdict"`
	Results     []Result `json:"results"`
}

// Failed returns the failed results of a level.
func (r *Report) Failed(l Level) []Result { return r.withStatus(l, Fail) }

// NotRunOf returns the results of a level that could not run.
func (r *Report) NotRunOf(l Level) []Result { return r.withStatus(l, NotRun) }

func (r *Report) withStatus(l Level, st Status) []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Level == l && res.Status == st {
			out = append(out, res)
		}
	}
	return out
}

// Result returns the result of a check by id.
func (r *Report) Result(id string) (Result, bool) {
	i := slices.IndexFunc(r.Results, func(res Result) bool { return res.ID == id })
	if i < 0 {
		return Result{}, false
	}
	return r.Results[i], true
}

// Groups of checks, for Options.Groups.
const (
	GroupCard   = "card"
	GroupCore   = "core"
	GroupList   = "list"
	GroupLease  = "lease"
	GroupBudget = "budget"
	GroupBounds = "bounds"
	GroupPush   = "push"
)

// AllGroups lists every group in the order they run.
var AllGroups = []string{GroupCard, GroupCore, GroupList, GroupPush, GroupLease, GroupBudget, GroupBounds}

// Texts are the message texts the check sends. The defaults drive the
// sample agents (examples/agents) and an agent built on the JS SDK's
// examples; set them for an agent that needs other words.
type Texts struct {
	// Quick should finish at once (completed).
	Quick string `json:"quick"`
	// Long should keep working until cancelled.
	Long string `json:"long"`
	// Ask should settle input-required; Reply is sent to it.
	Ask   string `json:"ask"`
	Reply string `json:"reply"`
}

// DefaultTexts drive examples/agents/worker and examples/agents/js-echo.
var DefaultTexts = Texts{
	Quick: "tether-check quick: steps=1 delay=10ms",
	Long:  "wait: work until cancelled (forever)",
	Ask:   "input: ask for input first (ask steps=1 delay=10ms)",
	Reply: "tether-check reply",
}

// Options configure a run.
type Options struct {
	Endpoint a2a.Endpoint
	Texts    Texts
	// LeaseTTL is the ttl of the lease checks (default 3s): renewals are
	// checked for two ttls, a lapse must stop the task within one.
	LeaseTTL time.Duration
	// Deadline is how far ahead the budget deadline check sets its
	// deadline (default 3s, whole seconds).
	Deadline time.Duration
	// Within bounds every wait for a state: a cancel reaching canceled, a
	// task settling, a deadline or a lapse stopping a task (default 15s).
	Within time.Duration
	// Meter is the meter the agent spends (default tokens); the budget
	// checks grant it generously.
	Meter string
	// Groups limits the run to some groups (default all); the card is
	// always read.
	Groups []string
	// RunID makes message ids recognisable (default random).
	RunID string
	// RequireSignature makes the card signature check a MUST (the Agent's
	// spec.cardSignature.required); the key set is Endpoint.CardKeys.
	RequireSignature bool
	// PushListen is where the push check's receiver listens, PushURL how
	// the agent reaches it. Default: a loopback port, for an agent on loopback.
	PushListen string
	PushURL    string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Texts.Quick == "" {
		o.Texts.Quick = DefaultTexts.Quick
	}
	if o.Texts.Long == "" {
		o.Texts.Long = DefaultTexts.Long
	}
	if o.Texts.Ask == "" {
		o.Texts.Ask = DefaultTexts.Ask
	}
	if o.Texts.Reply == "" {
		o.Texts.Reply = DefaultTexts.Reply
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 3 * time.Second
	}
	if o.Deadline <= 0 {
		o.Deadline = 3 * time.Second
	}
	if o.Within <= 0 {
		o.Within = 15 * time.Second
	}
	if o.Meter == "" {
		o.Meter = "tokens"
	}
	if len(o.Groups) == 0 {
		o.Groups = AllGroups
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}
