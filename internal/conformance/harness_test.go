/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/tether-dev/tether/pkg/agentkit"
)

// harnessExecutor is the vectors' harness executor (docs/extensions/README.md):
// what it does is read from the message text.
type harnessExecutor struct {
	mu      sync.Mutex
	charged map[a2a.TaskID][]string // "ok" or "exhausted", per charge
}

func newHarnessExecutor() *harnessExecutor {
	return &harnessExecutor{charged: map[a2a.TaskID][]string{}}
}

func (h *harnessExecutor) chargesOf(id a2a.TaskID) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.charged[id]...)
}

func (h *harnessExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		text := messageText(ec.Message)
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch {
		case text == "work":
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
			<-ctx.Done()
			return
		case text == "ask":
			ask := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("which one?"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			return
		case strings.HasPrefix(text, "charge "):
			budget := agentkit.BudgetFrom(ctx)
			for c := range strings.SplitSeq(text, ";") {
				meter, amount, err := parseCharge(c)
				if err != nil {
					yield(nil, err)
					return
				}
				err = budget.Charge(meter, amount)
				h.mu.Lock()
				h.charged[ec.TaskID] = append(h.charged[ec.TaskID], map[bool]string{true: "ok", false: "exhausted"}[err == nil])
				h.mu.Unlock()
				if err != nil {
					yield(nil, err)
					return
				}
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (h *harnessExecutor) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// parseCharge reads "charge METER AMOUNT".
func parseCharge(s string) (string, int64, error) {
	f := strings.Fields(s)
	if len(f) != 3 || f[0] != "charge" {
		return "", 0, fmt.Errorf("not a charge: %q", s)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	return f[1], n, err
}

// chargeText is the harness text for a charges vector.
func chargeText(cs []VectorCharge) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("charge %s %d", c.Meter, c.Amount)
	}
	return strings.Join(parts, "; ")
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return strings.TrimSpace(b.String())
}
