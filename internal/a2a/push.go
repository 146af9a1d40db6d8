/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package a2a

import (
	"encoding/json"
	"net/http"
	"strings"

	legacy "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// What a push notification carries, for the receivers (the operator's and
// the conformance check's).

// PresentedPushToken is the token a push notification presents, in any of
// the three ways senders present it: a2a-go's header, the 0.3 header and
// the 1.0 specification's Authorization credential.
func PresentedPushToken(r *http.Request) string {
	for _, h := range []string{"A2A-Notification-Token", "X-A2A-Notification-Token"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return cred
}

// NotifiedTaskID reads the task id from a 1.0 StreamResponse ({"task":…},
// {"statusUpdate":…}, {"artifactUpdate":…}) or a 0.3 Task.
func NotifiedTaskID(body []byte) string {
	var n struct {
		ID             string                   `json:"id"`
		Task           *struct{ ID string }     `json:"task"`
		StatusUpdate   *struct{ TaskID string } `json:"statusUpdate"`
		ArtifactUpdate *struct{ TaskID string } `json:"artifactUpdate"`
	}
	if json.Unmarshal(body, &n) != nil {
		return ""
	}
	switch {
	case n.Task != nil:
		return n.Task.ID
	case n.StatusUpdate != nil:
		return n.StatusUpdate.TaskID
	case n.ArtifactUpdate != nil:
		return n.ArtifactUpdate.TaskID
	}
	return n.ID
}

// NotifiedArtifactOnly: the notification carries an artifact update and
// nothing else (a 1.0 {"artifactUpdate":…}, or a 0.3 "artifact-update"
// event). It says nothing of the task's state; the artifacts are read with
// the task once it ends, as a stream's artifact events are.
func NotifiedArtifactOnly(body []byte) bool {
	var n struct {
		Kind           string          `json:"kind"`
		Task           json.RawMessage `json:"task"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
	}
	if json.Unmarshal(body, &n) != nil || n.Task != nil || n.StatusUpdate != nil {
		return false
	}
	return n.ArtifactUpdate != nil || n.Kind == "artifact-update"
}

// NotifiedEnd is the ended task a notification carries whole: a 1.0
// StreamResponse {"task":…} or a 0.3 Task, in a state that ends it. Nil for
// an update ({"statusUpdate":…} carries no artifacts), a running task or a
// body that does not decode: then the task must be read. The caller checks
// that the task is the one the notification's token is for.
func NotifiedEnd(body []byte) *Task {
	var wire *a2a.Task
	var sr a2a.StreamResponse
	if json.Unmarshal(body, &sr) == nil {
		wire, _ = sr.Event.(*a2a.Task)
	} else {
		var old legacy.Task
		if json.Unmarshal(body, &old) != nil || old.ID == "" {
			return nil
		}
		var err error
		if wire, err = a2av0.ToV1Task(&old); err != nil {
			return nil
		}
	}
	if wire == nil || !ParseState(string(wire.Status.State)).Terminal() {
		return nil
	}
	t, err := checked(opPush, taskFromWire(wire))
	if err != nil {
		return nil
	}
	return t
}

const opPush = "PushNotification"
