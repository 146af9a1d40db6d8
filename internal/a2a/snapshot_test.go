/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	. "github.com/onsi/gomega"
)

func snapshotTask(id string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: a2a.TaskID(id), ContextID: "ctx", Status: a2a.TaskStatus{State: state}}
}

func statusUpdate(id string, state a2a.TaskState, meta map[string]any) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(id), ContextID: "ctx", Status: a2a.TaskStatus{State: state}, Metadata: meta}
}

func artifactUpdate(id, artifactID, text string, appendTo bool) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(id), ContextID: "ctx", Append: appendTo,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(artifactID), Parts: a2a.ContentParts{a2a.NewTextPart(text)}}}
}

// Status and artifact updates applied to the whole task the stream began
// with give the ended task, with appended chunks joined and the spend the
// end reported.
func TestSnapshotAppliesUpdatesToTheFirstTask(t *testing.T) {
	g := NewWithT(t)
	s := newTaskSnapshot("t1", 1<<20)
	s.apply(snapshotTask("t1", a2a.TaskStateSubmitted))
	s.apply(statusUpdate("t1", a2a.TaskStateWorking, nil))
	g.Expect(s.ended()).To(BeNil(), "not ended yet")
	s.apply(artifactUpdate("t1", "a", "hello ", false))
	s.apply(artifactUpdate("t1", "a", "world", true))
	s.apply(artifactUpdate("t1", "b", "draft", false))
	s.apply(artifactUpdate("t1", "b", "final", false)) // replaces
	s.apply(statusUpdate("t1", a2a.TaskStateCompleted, map[string]any{
		BudgetExtensionURI: map[string]any{"spent": map[string]any{"tokens": 7}},
	}))

	ended := s.ended()
	g.Expect(ended).NotTo(BeNil())
	g.Expect(ended.ID).To(Equal("t1"))
	g.Expect(ended.State).To(Equal(StateCompleted))
	g.Expect(ended.Artifacts).To(HaveLen(2))
	g.Expect(ended.Artifacts[0].Text).To(Equal("hello \nworld"))
	g.Expect(ended.Artifacts[1].Text).To(Equal("final"))
	g.Expect(ended.Usage).NotTo(BeNil())
	g.Expect(ended.Usage.Spent).To(HaveKeyWithValue("tokens", int64(7)))
}

// Without the whole task first there is nothing to apply updates to: the
// end must be read.
func TestSnapshotWithoutTheWholeTaskGivesNoEnd(t *testing.T) {
	g := NewWithT(t)
	s := newTaskSnapshot("t1", 1<<20)
	s.apply(artifactUpdate("t1", "a", "result", false))
	s.apply(statusUpdate("t1", a2a.TaskStateCompleted, nil))
	g.Expect(s.ended()).To(BeNil())
}

// An event of another task drops the snapshot: a lying stream's task is
// never taken for this one's, not even after a later update of this task.
func TestSnapshotDropsOnAnotherTasksEvent(t *testing.T) {
	g := NewWithT(t)
	s := newTaskSnapshot("t1", 1<<20)
	s.apply(snapshotTask("t1", a2a.TaskStateWorking))
	s.apply(artifactUpdate("t2", "a", "not yours", false))
	s.apply(statusUpdate("t1", a2a.TaskStateCompleted, nil))
	g.Expect(s.ended()).To(BeNil())

	other := newTaskSnapshot("t1", 1<<20)
	other.apply(snapshotTask("t2", a2a.TaskStateCompleted))
	g.Expect(other.ended()).To(BeNil(), "another task's whole task")
}

// Artifacts past the bound drop the snapshot (a GetTask answers, or refuses
// to, under the same bound); under it they are kept.
func TestSnapshotPastTheBoundIsDropped(t *testing.T) {
	g := NewWithT(t)
	s := newTaskSnapshot("t1", 100)
	s.apply(snapshotTask("t1", a2a.TaskStateWorking))
	s.apply(artifactUpdate("t1", "a", strings.Repeat("x", 60), false))
	s.apply(artifactUpdate("t1", "a", strings.Repeat("y", 60), true))
	s.apply(statusUpdate("t1", a2a.TaskStateCompleted, nil))
	g.Expect(s.ended()).To(BeNil())

	under := newTaskSnapshot("t1", 100)
	under.apply(snapshotTask("t1", a2a.TaskStateWorking))
	under.apply(artifactUpdate("t1", "a", strings.Repeat("x", 60), false))
	under.apply(artifactUpdate("t1", "a", strings.Repeat("y", 30), false)) // replaces: 30 held
	under.apply(statusUpdate("t1", a2a.TaskStateCompleted, nil))
	g.Expect(under.ended()).NotTo(BeNil())
}

// A notification carries the ended task whole as a 1.0 StreamResponse or a
// 0.3 Task; an update, a running task or an unreadable body carries none.
func TestNotifiedEnd(t *testing.T) {
	g := NewWithT(t)
	v1 := NotifiedEnd([]byte(`{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},` +
		`"artifacts":[{"artifactId":"a","parts":[{"text":"done"}]}]}}`))
	g.Expect(v1).NotTo(BeNil())
	g.Expect(v1.ID).To(Equal("t1"))
	g.Expect(v1.ResultText).To(Equal("done"))
	v03 := NotifiedEnd([]byte(`{"kind":"task","id":"t1","contextId":"c","status":{"state":"failed"},` +
		`"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"broke"}]}]}`))
	g.Expect(v03).NotTo(BeNil())
	g.Expect(v03.State).To(Equal(StateFailed))
	g.Expect(v03.ResultText).To(Equal("broke"))

	g.Expect(NotifiedEnd([]byte(`{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`))).To(BeNil())
	g.Expect(NotifiedEnd([]byte(`{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`))).To(BeNil())
	g.Expect(NotifiedEnd([]byte(`not json`))).To(BeNil())
}

// Only a notification of an artifact alone says nothing of the task's
// state; a status update, a task, or a body that does not decode may.
func TestNotifiedArtifactOnly(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NotifiedArtifactOnly([]byte(`{"artifactUpdate":{"taskId":"t1","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`))).To(BeTrue())
	g.Expect(NotifiedArtifactOnly([]byte(`{"kind":"artifact-update","taskId":"t1","contextId":"c","artifact":{"artifactId":"a"}}`))).To(BeTrue())

	g.Expect(NotifiedArtifactOnly([]byte(`{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`))).To(BeFalse())
	g.Expect(NotifiedArtifactOnly([]byte(`{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`))).To(BeFalse())
	g.Expect(NotifiedArtifactOnly([]byte(`{"kind":"task","id":"t1","contextId":"c","status":{"state":"failed"}}`))).To(BeFalse())
	g.Expect(NotifiedArtifactOnly([]byte(`{"artifactUpdate":{"taskId":"t1"},"statusUpdate":{"taskId":"t1"}}`))).To(BeFalse())
	g.Expect(NotifiedArtifactOnly([]byte(`not json`))).To(BeFalse())
	g.Expect(NotifiedArtifactOnly(nil)).To(BeFalse())
}
