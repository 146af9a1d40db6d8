/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/tether-dev/tether/internal/a2a"
)

// Check ids of the card group.
const (
	CheckCardParses       = "card.parses"
	CheckCardOrigins      = "card.origins"
	CheckCardReachable    = "card.interfaces-reachable"
	CheckCardExtParams    = "card.extension-params"
	CheckSendGetPrefix    = "send-get/"
	CheckGetUnknownTask   = "get.unknown-task"
	unknownTaskIDSuffix   = "no-such-task"
	extensionParamsAbsent = "no lease parameters (the default maximum, 3600 s, applies)"
)

// interfaceLabel names an interface in the report: binding and version.
func interfaceLabel(i a2a.Interface) string {
	v := i.ProtocolVersion
	if v == "" {
		v = "1.0"
	}
	return i.Binding + "-" + v
}

// checkCard reads the card, checks every interface it lists, and sends one
// task on each one the checker can speak.
func (r *runner) checkCard(ctx context.Context) {
	card, err := a2a.ReadCardDetails(ctx, r.opts.Endpoint)
	if err != nil {
		r.record(CheckCardParses, "the agent card is served and parses", Must, Fail, "%s", describeErr(err))
		return
	}
	r.card = card
	var exts []string
	for uri, params := range card.Extensions {
		switch uri {
		case a2a.LeaseExtensionURI:
			exts = append(exts, fmt.Sprintf("lease (max ttl %vs)", r.maxTTLSeconds()))
		case a2a.BudgetExtensionURI:
			exts = append(exts, "budget")
		}
		_ = params
	}
	if len(exts) == 0 {
		exts = []string{"none of tether's"}
	}
	if card.Chosen == nil {
		r.record(CheckCardParses, "the agent card is served and parses", Must, Fail,
			"%q lists %d interfaces, none with a binding and version tether speaks", card.Name, len(card.Interfaces))
		return
	}
	r.record(CheckCardParses, "the agent card is served and parses", Must, Pass,
		"%q: %d interfaces, extensions: %s", card.Name, len(card.Interfaces), strings.Join(exts, ", "))
	r.checkCardSignature()

	if _, ok := card.Extensions[a2a.LeaseExtensionURI]; ok {
		params := card.Extensions[a2a.LeaseExtensionURI]
		if params == nil {
			r.record(CheckCardExtParams, "extension parameters are valid against their schema", Must, Pass, extensionParamsAbsent)
		} else if err := Validate(SchemaLeaseCardParams, params); err != nil {
			r.record(CheckCardExtParams, "extension parameters are valid against their schema", Must, Fail, "lease params: %v", err)
		} else {
			r.record(CheckCardExtParams, "extension parameters are valid against their schema", Must, Pass, "lease params %v", params)
		}
	}

	// Origins: every interface must lie within the origins the check was
	// told to trust, as the operator requires before it sends headers.
	var outside, origins []string
	for _, i := range card.Interfaces {
		c := i.Card
		if c == nil {
			c = &a2a.Card{Binding: i.Binding, URL: i.URL}
		}
		if err := a2a.CheckInterfaceOrigin(r.opts.Endpoint, c); err != nil {
			outside = append(outside, fmt.Sprintf("%s %s", interfaceLabel(i), i.URL))
		} else {
			origins = append(origins, interfaceLabel(i))
		}
	}
	if len(outside) > 0 {
		r.record(CheckCardOrigins, "every interface lies within the agent's origins", Must, Fail,
			"outside the origins (list them with --allowed-origin to trust them): %s", strings.Join(outside, "; "))
	} else {
		r.record(CheckCardOrigins, "every interface lies within the agent's origins", Must, Pass, "%d interfaces within", len(origins))
	}

	// Reachable, and one task sent and read back, on each interface.
	r.record(CheckCardReachable, "every interface the card lists answers", Must, NotRun, "did not finish")
	var reach []string
	reachFail := false
	for _, i := range card.Interfaces {
		label := interfaceLabel(i)
		id := CheckSendGetPrefix + label
		what := "send and get on " + label
		if i.Card == nil {
			reach = append(reach, label+": not a binding tether speaks")
			r.record(id, what, Must, Skipped, "binding %q version %q is not one tether speaks", i.Binding, i.ProtocolVersion)
			continue
		}
		if err := a2a.CheckInterfaceOrigin(r.opts.Endpoint, i.Card); err != nil {
			reach = append(reach, label+": outside the origins, not called")
			r.record(id, what, Must, Skipped, "outside the agent's origins")
			continue
		}
		p, err := r.prober(ctx, i.Card)
		if err != nil {
			reachFail = true
			reach = append(reach, label+": "+describeErr(err))
			r.record(id, what, Must, Fail, "no client: %s", describeErr(err))
			continue
		}
		if isChosen(card.Chosen, i.Card) && r.main == nil {
			r.main = p
		}
		_, ctxID := r.ids("probe")
		_, err = p.ProbeGet(ctx, ctxID+"-"+unknownTaskIDSuffix, nil, false)
		r.sawErr(err)
		// An A2A answer (a task, or an A2A error code) shows the
		// interface is there; a transport error or a bare HTTP status does not.
		switch code, _ := a2a.ErrorCode(err); {
		case err == nil, !a2a.IsTransport(err) && code < 0:
			reach = append(reach, label+": answered")
		default:
			reachFail = true
			reach = append(reach, label+": "+describeErr(err))
		}
		if r.main == p {
			r.recordUnknownTask(err)
		}
		r.checkSendGet(ctx, p, id, what)
	}
	status := Pass
	if reachFail {
		status = Fail
	}
	r.record(CheckCardReachable, "every interface the card lists answers", Must, status, "%s", strings.Join(reach, "; "))
}

func isChosen(chosen, c *a2a.Card) bool {
	return chosen != nil && chosen.URL == c.URL && chosen.Binding == c.Binding && chosen.ProtocolVersion == c.ProtocolVersion
}

// recordUnknownTask: GetTask of a task that does not exist answers TaskNotFound.
func (r *runner) recordUnknownTask(err error) {
	const what = "GetTask of an unknown task answers TaskNotFound"
	switch {
	case err == nil:
		r.record(CheckGetUnknownTask, what, Must, Fail, "answered a task for an id the check made up")
	case a2a.IsTaskNotFound(err):
		r.record(CheckGetUnknownTask, what, Must, Pass, "TaskNotFound")
	default:
		r.record(CheckGetUnknownTask, what, Must, Fail, "%s", describeErr(err))
	}
}

// checkSendGet sends the quick text and reads the task back by its id.
func (r *runner) checkSendGet(ctx context.Context, p a2a.Prober, id, what string) {
	msgID, ctxID := r.ids("send")
	t, err := r.send(ctx, p, a2a.ProbeSend{MessageID: msgID, ContextID: ctxID, Text: r.opts.Texts.Quick})
	if err != nil {
		r.record(id, what, Must, Fail, "SendMessage: %s", describeErr(err))
		return
	}
	if t.Message {
		r.record(id, what, Must, NotRun, "answered with a message, no task: tether cannot follow its work")
		return
	}
	got, err := r.get(ctx, p, t.ID)
	switch {
	case err != nil:
		r.record(id, what, Must, Fail, "task %s sent, GetTask: %s", t.ID, describeErr(err))
	case got.ID != t.ID:
		r.record(id, what, Must, Fail, "GetTask(%s) answered task %q", t.ID, got.ID)
	default:
		r.record(id, what, Must, Pass, "task %s, %s", t.ID, got.State)
		if p == r.main {
			r.mu.Lock()
			r.quick = &sentTask{id: t.ID, msgID: msgID, ctxID: ctxID}
			r.mu.Unlock()
		}
	}
}

// sentTask is a task the run sent and may use again.
type sentTask struct{ id, msgID, ctxID string }

// maxTTLSeconds is the longest lease the card says the agent grants.
func (r *runner) maxTTLSeconds() float64 {
	if r.card == nil {
		return defaultMaxTTLSeconds
	}
	if v, ok := r.card.Extensions[a2a.LeaseExtensionURI]["maxTTLSeconds"].(float64); ok && v > 0 {
		return v
	}
	return defaultMaxTTLSeconds
}
