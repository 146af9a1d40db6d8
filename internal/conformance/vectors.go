/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/tether-dev/tether/docs/extensions"
	"github.com/tether-dev/tether/internal/a2a"
)

// Vector kinds (docs/extensions/README.md).
const (
	KindSend          = "send"
	KindCharges       = "charges"
	KindLeaseTimeline = "lease-timeline"
)

// VectorFile is one file of docs/extensions/vectors.
type VectorFile struct {
	Name        string   `json:"-"`
	Format      string   `json:"format"`
	Extension   string   `json:"extension"`
	Description string   `json:"description"`
	Vectors     []Vector `json:"vectors"`
}

// Vector is one test vector; which fields are set depends on Kind.
type Vector struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Kind        string       `json:"kind"`
	Agent       *VectorAgent `json:"agent,omitempty"`
	// send
	Message     *VectorMetadata `json:"message,omitempty"`
	Request     *VectorMetadata `json:"request,omitempty"`
	AnyExecutor bool            `json:"anyExecutor,omitempty"`
	// charges
	Grant   map[string]any `json:"grant,omitempty"`
	Charges []VectorCharge `json:"charges,omitempty"`
	// lease-timeline
	Executor string       `json:"executor,omitempty"`
	Steps    []VectorStep `json:"steps,omitempty"`

	Expect VectorExpect `json:"expect"`
}

// VectorAgent configures the agent under test.
type VectorAgent struct {
	MaxTTLSeconds float64 `json:"maxTTLSeconds,omitempty"`
}

// MaxTTLSeconds is the longest lease the vector's agent grants.
func (v Vector) MaxTTLSeconds() float64 {
	if v.Agent != nil && v.Agent.MaxTTLSeconds > 0 {
		return v.Agent.MaxTTLSeconds
	}
	return defaultMaxTTLSeconds
}

// VectorMetadata is a metadata map, numbers kept exact (json.Number).
type VectorMetadata struct {
	Metadata map[string]any `json:"metadata"`
}

// VectorCharge is one charge the harness executor makes.
type VectorCharge struct {
	Meter  string `json:"meter"`
	Amount int64  `json:"amount"`
	Expect string `json:"expect"` // "ok" or "exhausted"
}

// VectorStep is one step of a lease timeline.
type VectorStep struct {
	At         float64      `json:"at"`
	Op         string       `json:"op"` // send, get, await
	TTLSeconds float64      `json:"ttlSeconds,omitempty"`
	Activate   bool         `json:"activate,omitempty"`
	Expect     VectorExpect `json:"expect"`
}

// VectorExpect is what a conforming agent does.
type VectorExpect struct {
	Outcome string       `json:"outcome,omitempty"` // accepted or refused
	Error   *VectorError `json:"error,omitempty"`
	// Lease is the expected lease answer: nil with LeaseNone false means
	// "not checked"; LeaseNone means "no expiresAt".
	Lease     *VectorLease  `json:"lease,omitempty"`
	LeaseNone bool          `json:"-"`
	Settle    *VectorSettle `json:"settle,omitempty"`
	Report    *VectorReport `json:"report,omitempty"`
	// lease timeline
	ExpiresAt         *float64 `json:"expiresAt,omitempty"`
	ExpiresAtNotAfter *float64 `json:"expiresAtNotAfter,omitempty"`
	State             string   `json:"state,omitempty"`
}

// UnmarshalJSON tells "lease": null (no lease expected) from no "lease".
func (e *VectorExpect) UnmarshalJSON(b []byte) error {
	type plain VectorExpect
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if raw, ok := probe["lease"]; ok && string(bytes.TrimSpace(raw)) == "null" {
		e.LeaseNone = true
	}
	return nil
}

// VectorError is an expected refusal.
type VectorError struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

// VectorLease is an expected lease answer.
type VectorLease struct {
	ExpiresInSeconds float64 `json:"expiresInSeconds"`
}

// VectorSettle is the state a task settles in.
type VectorSettle struct {
	State        string `json:"state"`
	FailureClass string `json:"failureClass,omitempty"`
}

// VectorReport is the expected budget report on the settling update.
type VectorReport struct {
	Left  map[string]int64 `json:"left,omitempty"`
	Spent map[string]int64 `json:"spent"`
}

// LoadVectors reads every vector file, numbers in metadata kept exact.
func LoadVectors() ([]VectorFile, error) {
	entries, err := fs.ReadDir(extensions.Files, vectorsDir)
	if err != nil {
		return nil, err
	}
	var out []VectorFile
	seen := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), vectorsFileSuffixNeeded) {
			continue
		}
		raw, err := fs.ReadFile(extensions.Files, path.Join(vectorsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		var f VectorFile
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if f.Format != vectorFormat {
			return nil, fmt.Errorf("%s: format %q, want %q", e.Name(), f.Format, vectorFormat)
		}
		for _, v := range f.Vectors {
			if prev, dup := seen[v.Name]; dup {
				return nil, fmt.Errorf("%s: vector %q also in %s", e.Name(), v.Name, prev)
			}
			seen[v.Name] = e.Name()
		}
		f.Name = e.Name()
		out = append(out, f)
	}
	return out, nil
}

// ReadData returns the extension data an agent reads for a send vector:
// the message's entry for uri, else the request's (docs/extensions.md §3.3).
func (v Vector) ReadData(uri string) (any, bool) {
	for _, m := range []*VectorMetadata{v.Message, v.Request} {
		if m == nil {
			continue
		}
		if d, ok := m.Metadata[uri]; ok {
			return d, true
		}
	}
	return nil, false
}

// ReportMatches compares a report with a vector's expectation: left exactly
// (an empty left and none are the same), spent with meters of 0 dropped.
func ReportMatches(got a2a.BudgetReportMetadata, want *VectorReport) error {
	// An empty left travels as none (omitempty): both mean nothing is left
	// to spend by meter.
	if !maps.Equal(got.Left, want.Left) {
		return fmt.Errorf("left is %v, want %v", got.Left, want.Left)
	}
	if !maps.Equal(nonZero(got.Spent), nonZero(want.Spent)) {
		return fmt.Errorf("spent is %v, want %v", got.Spent, want.Spent)
	}
	return nil
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
