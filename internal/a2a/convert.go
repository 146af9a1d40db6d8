/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// SkillMetadataKey carries SendRequest.Skill in the message metadata: A2A has
// no skill field, agents that route by skill read it from here.
const SkillMetadataKey = "skill"

// ParseState maps a task state of either protocol version to State: 1.0
// names ("TASK_STATE_INPUT_REQUIRED"), 0.3 names ("input-required") and
// a2a-go's normalised values all land on the same State.
func ParseState(s string) State {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimPrefix(k, "task_state_")
	k = strings.ReplaceAll(k, "_", "-")
	switch k {
	case "submitted":
		return StateSubmitted
	case "working":
		return StateWorking
	case "input-required":
		return StateInputRequired
	case "auth-required":
		return StateAuthRequired
	case "completed":
		return StateCompleted
	case "failed":
		return StateFailed
	case "canceled", "cancelled":
		return StateCanceled
	case "rejected":
		return StateRejected
	}
	return StateUnknown
}

// taskFromWire maps an a2a-go task (either version, already normalised by
// a2a-go) to Task.
func taskFromWire(t *a2a.Task) *Task {
	if t == nil {
		return nil
	}
	out := &Task{ID: string(t.ID), ContextID: t.ContextID, State: ParseState(string(t.Status.State))}
	var statusMeta map[string]any
	if m := t.Status.Message; m != nil {
		out.StatusText = joinText(m.Parts)
		statusMeta = m.Metadata
		if fc, ok := m.Metadata[FailureClassMetadataKey].(string); ok {
			out.FailureClass = fc
		}
	}
	// Artifacts are read only from a settled task: that is when its result
	// is kept. A running task's artifacts (a poll, a renewal) are never
	// used, and keeping them would hold every answer's bulk until the
	// reconciler takes it.
	var results []string
	for i, a := range t.Artifacts {
		if i == MaxArtifacts || !out.State.Terminal() {
			break
		}
		if a == nil {
			continue
		}
		arts, texts := artifactsFromWire(a)
		out.Artifacts = append(out.Artifacts, arts...)
		results = append(results, texts...)
	}
	out.ResultText = strings.Join(results, "\n")
	for _, m := range t.History {
		if m != nil && m.Role == a2a.MessageRoleUser && m.ID != "" && len(m.ID) <= MaxIDLength {
			out.MessageIDs = append(out.MessageIDs, m.ID)
		}
	}
	if out.ResultText == "" && out.State.Terminal() {
		out.ResultText = out.StatusText
	}
	var grant LeaseGrantMetadata
	if decodeMeta(t.Metadata, LeaseExtensionURI, &grant) {
		out.LeaseExpiresAt = grant.ExpiresAt
	}
	// The status message is the latest status update; a2a-go servers also
	// merge status-update metadata into the task's, so that is the fallback.
	var report BudgetReportMetadata
	if decodeMeta(statusMeta, BudgetExtensionURI, &report) || decodeMeta(t.Metadata, BudgetExtensionURI, &report) {
		out.Usage = &Usage{Left: boundMeters(report.Left), Spent: boundMeters(report.Spent)}
	}
	return escapeTask(out)
}

// taskFromMessage maps a Message answer to a completed Task. Agents that
// answer at once with a Message create no task, so ID may be empty.
func taskFromMessage(m *a2a.Message) *Task {
	text := joinText(m.Parts)
	return escapeTask(&Task{
		ID:         string(m.TaskID),
		ContextID:  m.ContextID,
		State:      StateCompleted,
		StatusText: text,
		ResultText: text,
	})
}

// artifactsFromWire flattens one artifact: its text parts become one Artifact,
// each file part (URL or inline bytes) one more.
func artifactsFromWire(a *a2a.Artifact) ([]Artifact, []string) {
	var out []Artifact
	var texts []string
	textMedia := ""
	for _, p := range a.Parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
			if textMedia == "" {
				textMedia = p.MediaType
			}
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				continue
			}
			media := p.MediaType
			if media == "" {
				media = "application/json"
			}
			out = append(out, Artifact{Name: firstNonEmpty(a.Name, p.Filename), MediaType: media, Text: string(b)})
		case a2a.URL:
			out = append(out, Artifact{Name: firstNonEmpty(p.Filename, a.Name), MediaType: p.MediaType, URL: string(c)})
		case a2a.Raw:
			// Inline bytes are not kept in status; name and type say they exist.
			out = append(out, Artifact{Name: firstNonEmpty(p.Filename, a.Name), MediaType: p.MediaType})
		}
	}
	if len(texts) > 0 {
		text := Artifact{Name: a.Name, MediaType: textMedia, Text: strings.Join(texts, "\n")}
		out = append([]Artifact{text}, out...)
	}
	return out, texts
}

func joinText(parts a2a.ContentParts) string {
	var texts []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			texts = append(texts, string(t))
		}
	}
	return strings.Join(texts, "\n")
}

// decodeMeta decodes meta[key] into v; false when absent or malformed (a
// broken report from an agent is ignored rather than failing the read).
func decodeMeta(meta map[string]any, key string, v any) bool {
	raw, ok := meta[key]
	if !ok || raw == nil {
		return false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// errInvalidPart is a caller mistake: nothing was sent.
var errInvalidPart = errors.New("invalid part")

// buildSend builds the outgoing message and request metadata, and returns
// the extension URIs to activate for the data it carries.
func buildSend(req SendRequest) (*a2a.Message, map[string]any, []string, error) {
	var parts a2a.ContentParts
	if req.Text != "" {
		parts = append(parts, a2a.NewTextPart(req.Text))
	}
	for i, p := range req.Parts {
		wp, err := partToWire(p)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("part %d: %w", i, err)
		}
		parts = append(parts, wp)
	}
	if len(parts) == 0 {
		return nil, nil, nil, fmt.Errorf("%w: the message has no text and no parts", errInvalidPart)
	}

	meta := maps.Clone(req.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	if req.Skill != "" {
		meta[SkillMetadataKey] = req.Skill
	}
	var exts []string
	if req.Lease != nil {
		meta[LeaseExtensionURI] = LeaseRequestMetadata{TTLSeconds: req.Lease.TTL.Seconds()}
		exts = append(exts, LeaseExtensionURI)
	}
	if req.Budget != nil {
		b := BudgetRequestMetadata{Meters: req.Budget.Meters}
		if !req.Budget.Deadline.IsZero() {
			// Rounded down so the agent never sees a later deadline than granted.
			d := req.Budget.Deadline.UTC().Truncate(time.Second)
			b.Deadline = &d
		}
		meta[BudgetExtensionURI] = b
		exts = append(exts, BudgetExtensionURI)
	}
	for _, uri := range req.Extensions {
		if !slices.Contains(exts, uri) {
			exts = append(exts, uri)
		}
	}
	if len(meta) == 0 {
		meta = nil
	} else {
		var err error
		if meta, err = jsonValues(meta); err != nil {
			return nil, nil, nil, fmt.Errorf("metadata: %w", err)
		}
	}

	msg := &a2a.Message{
		ID:         req.MessageID,
		ContextID:  req.ContextID,
		TaskID:     a2a.TaskID(req.TaskID),
		Role:       a2a.MessageRoleUser,
		Parts:      parts,
		Metadata:   meta,
		Extensions: exts,
	}
	if msg.ID == "" {
		msg.ID = a2a.NewMessageID()
	}
	// The same metadata goes on the request too: a2a-go agents see request
	// metadata in their executor context, others read the message's.
	return msg, maps.Clone(meta), exts, nil
}

// jsonValues turns metadata into plain JSON values (maps, slices, strings,
// json.Number, bools), which every binding can carry: the gRPC binding's
// protobuf Struct cannot hold Go structs. Numbers stay exact.
func jsonValues(meta map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func partToWire(p Part) (*a2a.Part, error) {
	set := 0
	for _, has := range []bool{p.Text != "", p.URL != "", len(p.Data) > 0} {
		if has {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%w: exactly one of text, url and data must be set", errInvalidPart)
	}
	var wp *a2a.Part
	switch {
	case p.Text != "":
		wp = a2a.NewTextPart(p.Text)
	case p.URL != "":
		wp = a2a.NewFileURLPart(a2a.URL(p.URL), "")
	default:
		var v any
		if err := json.Unmarshal(p.Data, &v); err != nil {
			return nil, fmt.Errorf("%w: data is not JSON: %w", errInvalidPart, err)
		}
		wp = a2a.NewDataPart(v)
	}
	wp.MediaType = p.MediaType
	wp.Filename = p.Filename
	return wp, nil
}
