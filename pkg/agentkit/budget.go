/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// ErrBudgetExhausted is returned by Budget.Charge when a charge would exceed
// the grant. An executor that yields it (wrapped or not) ends the task Failed
// with failure class BudgetExhausted.
var ErrBudgetExhausted = errors.New("budget exhausted")

// Budget is what a task may spend: named meters (e.g. tokens) and a deadline.
// A task that was granted no budget gets an unlimited one that still counts
// what is spent. A nil *Budget behaves as unlimited and counts nothing.
type Budget struct {
	mu       sync.Mutex
	limited  bool
	granted  map[string]int64
	spent    map[string]int64
	deadline time.Time
	// held is what was handed to child Delegations: their grant while they run,
	// what they reported spending once they settle. It lowers Left but is not
	// this task's own spend: the operator accounts for it on the child.
	held  map[string]int64
	holds map[string]map[string]int64 // child name → grant still reserved
	// exhausted records a refused charge, so a task that then just stops is
	// failed with the right class.
	exhausted bool
}

func newBudget(limited bool, granted, spent map[string]int64, deadline time.Time) *Budget {
	b := &Budget{
		limited:  limited,
		granted:  maps.Clone(granted),
		spent:    maps.Clone(spent),
		deadline: deadline,
		held:     map[string]int64{},
		holds:    map[string]map[string]int64{},
	}
	if b.granted == nil {
		b.granted = map[string]int64{}
	}
	if b.spent == nil {
		b.spent = map[string]int64{}
	}
	return b
}

type budgetKey struct{}

// BudgetFrom returns the budget of the task an executor is working on, or nil
// outside an agentkit executor.
func BudgetFrom(ctx context.Context) *Budget {
	b, _ := ctx.Value(budgetKey{}).(*Budget)
	return b
}

func withBudget(ctx context.Context, b *Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// Limited reports whether the task was granted a budget.
func (b *Budget) Limited() bool { return b != nil && b.limited }

// Granted returns the meters granted; nil when unlimited.
func (b *Budget) Granted() map[string]int64 {
	if !b.Limited() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.granted)
}

// Spent returns what the task itself charged so far.
func (b *Budget) Spent() map[string]int64 {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.spent)
}

// Left returns what may still be charged per granted meter; nil when
// unlimited. A meter that was not granted has nothing left.
func (b *Budget) Left() map[string]int64 {
	if !b.Limited() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.leftLocked()
}

func (b *Budget) leftLocked() map[string]int64 {
	left := make(map[string]int64, len(b.granted))
	for m, g := range b.granted {
		left[m] = max(0, g-b.spent[m]-b.held[m])
	}
	return left
}

// Deadline returns when the budget runs out of time; zero when never.
func (b *Budget) Deadline() time.Time {
	if b == nil {
		return time.Time{}
	}
	return b.deadline
}

// Charge records n units of meter as spent. Charge before spending: when the
// charge would exceed what is left nothing is recorded and the error wraps
// ErrBudgetExhausted.
func (b *Budget) Charge(meter string, n int64) error {
	if n < 0 {
		return fmt.Errorf("charge of %d %s: negative", n, meter)
	}
	if b == nil || n == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limited {
		if left := b.granted[meter] - b.spent[meter] - b.held[meter]; n > left {
			b.exhausted = true
			return fmt.Errorf("charge of %d %s with %d left: %w", n, meter, max(0, left), ErrBudgetExhausted)
		}
	}
	b.spent[meter] += n
	return nil
}

// reserve holds a child's grant. It is idempotent per child, so a retried
// Delegate does not hold twice.
func (b *Budget) reserve(child string, grant map[string]int64) error {
	if !b.Limited() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.holds[child]; ok {
		return nil
	}
	left := b.leftLocked()
	for m, n := range grant {
		if n > left[m] {
			return fmt.Errorf("granting %d %s to %s with %d left: %w", n, m, child, left[m], ErrBudgetExhausted)
		}
	}
	for m, n := range grant {
		b.held[m] += n
	}
	b.holds[child] = maps.Clone(grant)
	return nil
}

// settle replaces a child's reservation by what it spent; with spent nil the
// whole reservation stays held (the child ended without a report).
func (b *Budget) settle(child string, spent map[string]int64) {
	if !b.Limited() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	grant, ok := b.holds[child]
	if !ok || spent == nil {
		return
	}
	for m, n := range grant {
		b.held[m] -= n - min(n, max(0, spent[m]))
	}
	delete(b.holds, child)
}

// release drops a child's hold entirely (the child was never created).
func (b *Budget) release(child string) {
	if !b.Limited() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for m, n := range b.holds[child] {
		b.held[m] -= n
	}
	delete(b.holds, child)
}

func (b *Budget) wasExhausted() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exhausted
}

// report is the wire form carried by every status update.
func (b *Budget) report() tethera2a.BudgetReportMetadata {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := tethera2a.BudgetReportMetadata{Spent: maps.Clone(b.spent)}
	if b.limited {
		r.Left = b.leftLocked()
	}
	return r
}

// reports says whether there is anything to report: a grant (meters or a
// deadline alone: the client asked for a report either way) or some spend.
func (b *Budget) reports() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limited || !b.deadline.IsZero() || len(b.spent) > 0
}
