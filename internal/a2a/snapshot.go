/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A stream carries the task: SubscribeToTask sends the whole task first,
// then status and artifact updates that apply to it. Kept current, that
// snapshot is what a GetTask would answer once the stream reports the end,
// so the end costs no read. The snapshot holds at most the bound on one
// stream event of artifacts (what the memory budget counts for a stream);
// past that it is dropped and the task's end needs a read.

// taskSnapshot is one task as its stream shows it now.
type taskSnapshot struct {
	taskID string
	// limit bounds the artifact bytes held; held is what is held.
	limit, held int64
	// task is nil until the stream sent the whole task, and after it was
	// dropped (too large, or an update that does not apply to it).
	task *a2a.Task
}

func newTaskSnapshot(taskID string, limit int64) *taskSnapshot {
	return &taskSnapshot{taskID: taskID, limit: limit}
}

// apply applies one event of the stream. An event of another task drops
// the snapshot: it is never taken for this task's.
func (s *taskSnapshot) apply(ev a2a.Event) {
	if ev == nil || string(ev.TaskInfo().TaskID) != s.taskID {
		s.drop()
		return
	}
	switch e := ev.(type) {
	case *a2a.Task:
		t := *e
		t.Artifacts = slices.Clone(e.Artifacts)
		t.Metadata = maps.Clone(e.Metadata)
		s.task, s.held = &t, 0
		for _, a := range t.Artifacts {
			s.held += heldBytes(a)
		}
	case *a2a.TaskStatusUpdateEvent:
		if s.task == nil {
			return
		}
		s.task.Status = e.Status
		// As a2a-go servers do: the update's metadata is merged into the task's.
		if len(e.Metadata) > 0 {
			if s.task.Metadata == nil {
				s.task.Metadata = map[string]any{}
			}
			maps.Copy(s.task.Metadata, e.Metadata)
		}
	case *a2a.TaskArtifactUpdateEvent:
		if s.task != nil && e.Artifact != nil {
			s.applyArtifact(e)
		}
	}
	if s.held > s.limit {
		s.drop()
	}
}

// applyArtifact adds an artifact, replaces the one of the same id, or (with
// append) adds the update's parts to it.
func (s *taskSnapshot) applyArtifact(e *a2a.TaskArtifactUpdateEvent) {
	arts := s.task.Artifacts
	i := slices.IndexFunc(arts, func(a *a2a.Artifact) bool { return a != nil && a.ID == e.Artifact.ID })
	switch {
	case i < 0:
		s.task.Artifacts = append(arts, e.Artifact)
		s.held += heldBytes(e.Artifact)
	case e.Append:
		joined := *arts[i]
		joined.Parts = append(slices.Clone(arts[i].Parts), e.Artifact.Parts...)
		arts[i] = &joined
		s.held += heldBytes(&a2a.Artifact{Parts: e.Artifact.Parts})
	default:
		s.held += heldBytes(e.Artifact) - heldBytes(arts[i])
		arts[i] = e.Artifact
	}
}

func (s *taskSnapshot) drop() { s.task, s.held = nil, 0 }

// ended is the task as the stream shows it, when the stream reported its
// end and brought the whole task; nil when the task must be read.
func (s *taskSnapshot) ended() *Task {
	if s.task == nil || !ParseState(string(s.task.Status.State)).Terminal() {
		return nil
	}
	t, err := checked(opSubscribe, taskFromWire(s.task))
	if err != nil {
		return nil
	}
	return t
}

// heldBytes is about what an artifact holds: its texts, URLs, inline
// bytes and data, and its names.
func heldBytes(a *a2a.Artifact) int64 {
	if a == nil {
		return 0
	}
	n := int64(len(a.Name) + len(a.Description) + len(a.ID))
	for _, p := range a.Parts {
		if p == nil {
			continue
		}
		n += int64(len(p.Filename) + len(p.MediaType))
		switch c := p.Content.(type) {
		case a2a.Text:
			n += int64(len(c))
		case a2a.URL:
			n += int64(len(c))
		case a2a.Raw:
			n += int64(len(c))
		case a2a.Data:
			b, _ := json.Marshal(c.Value)
			n += int64(len(b))
		}
	}
	return n
}
