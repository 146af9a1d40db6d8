/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegation

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// fuzzBytes reads a fuzz input as a sequence of small decisions.
type fuzzBytes struct{ b []byte }

func (f *fuzzBytes) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

// value is any int64 (reports may be negative or huge); grant is one that
// admission allows (>= 0).
func (f *fuzzBytes) value() int64 {
	var buf [8]byte
	n := copy(buf[:], f.b)
	f.b = f.b[n:]
	v := int64(binary.LittleEndian.Uint64(buf[:]))
	switch buf[0] % 4 { // small values collide more usefully than random ones
	case 0:
		return v % 1000
	case 1:
		return -(v % 1000)
	}
	return v
}

func (f *fuzzBytes) grant() int64 {
	v := f.value()
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}

var fuzzMeters = []string{"tokens", "calls", "usd"}

func (f *fuzzBytes) meters(value func() int64) v1alpha1.Meters {
	out := v1alpha1.Meters{}
	for _, m := range fuzzMeters {
		if f.byte()%2 == 0 {
			out[m] = value()
		}
	}
	if f.byte()%8 == 0 {
		out["invented-"+strconv.Itoa(int(f.byte()))] = value() // a meter nobody granted
	}
	return out
}

var fuzzReasons = []string{ReasonCompleted, ReasonRemoteFailed, ReasonRemoteRejected, ReasonRemote, ReasonSendRefused,
	ReasonRequested, ReasonDeadline, ReasonTaskLost, ReasonUnreachable, ReasonDetached}

// FuzzLedger drives a group's ledger through reservations and settlements
// of children whose agents report anything at all (negative, invented,
// huge), through the public functions the controller uses, and checks after
// every step: granted = spent + reserved + left per meter, nothing negative,
// no overflow.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("reserve, then settle with a report of -1000000"))
	f.Add([]byte{2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{b: data}
		b := &v1alpha1.BudgetStatus{Granted: in.meters(in.grant)}
		delete(b.Granted, "invented-0")
		Recompute(b)
		children := map[string]v1alpha1.Meters{} // uid -> grant
		for step := 0; len(in.b) > 0 && step < 64; step++ {
			uid := "c" + strconv.Itoa(int(in.byte()%8))
			switch in.byte() % 2 {
			case 0:
				grant := Grant(&v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: in.meters(in.grant)}}, b.Granted)
				if ok, err := Reserve(b, uid, uid, grant); ok && err == nil {
					children[uid] = grant
				}
			case 1:
				grant := children[uid]
				report, _ := ClampReport(grant, in.meters(in.value))
				child := &v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"}}
				st := &v1alpha1.DelegationStatus{
					Outcome: &v1alpha1.Outcome{Reason: fuzzReasons[int(in.byte())%len(fuzzReasons)]},
					Budget:  &v1alpha1.BudgetStatus{Granted: grant, Reported: report},
				}
				if Settle(b, uid, func(reservation v1alpha1.Meters) v1alpha1.Meters { return Charge(child, st, reservation) }) {
					delete(children, uid)
				}
			}
			checkLedger(t, b, step)
		}
	})
}

func checkLedger(t *testing.T, b *v1alpha1.BudgetStatus, step int) {
	t.Helper()
	Recompute(b)
	for m, granted := range b.Granted {
		spent, reserved, left := b.Spent[m], b.Reserved[m], b.Left[m]
		if spent < 0 || reserved < 0 || left < 0 {
			t.Fatalf("step %d, meter %s: negative value: granted %d, spent %d, reserved %d, left %d", step, m, granted, spent, reserved, left)
		}
		sum := spent + reserved
		if sum < spent || sum+left < sum { // wrapped
			t.Fatalf("step %d, meter %s: overflow: spent %d + reserved %d + left %d", step, m, spent, reserved, left)
		}
		if sum+left != granted {
			t.Fatalf("step %d, meter %s: granted %d != spent %d + reserved %d + left %d", step, m, granted, spent, reserved, left)
		}
	}
	for _, mm := range []v1alpha1.Meters{b.Spent, b.Reserved, b.Charged} {
		for m := range mm {
			if _, ok := b.Granted[m]; !ok {
				t.Fatalf("step %d: meter %q was never granted: %s", step, m, fmt.Sprint(mm))
			}
		}
	}
}
