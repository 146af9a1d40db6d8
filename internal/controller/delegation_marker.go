/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// sendMarker reads the in-flight send marker of the current attempt from
// the annotation; a marker left by an earlier attempt is none.
func sendMarker(d *v1alpha1.Delegation) *metav1.Time {
	if _, ok := d.Annotations[v1alpha1.AnnotationSendStarted]; !ok || !markerOfAttempt(d) {
		return nil
	}
	if t := annotatedTime(d, v1alpha1.AnnotationSendStarted); t != nil {
		return t
	}
	// A marker that cannot be read still says a send may have been made.
	mt := metav1.NewTime(d.CreationTimestamp.Time)
	return &mt
}

// hydrateSendStarted shows the annotation's marker as status.sendStarted
// with sendResult InFlight, and the first send's deadline as
// status.sendDeadline (persisted there with the next status write).
func hydrateSendStarted(d *v1alpha1.Delegation) {
	if d.Status.SendStarted == nil {
		if d.Status.SendStarted = sendMarker(d); d.Status.SendStarted != nil && d.Status.TaskID == "" && d.Status.SendResult == "" {
			d.Status.SendResult = v1alpha1.SendInFlight
		}
	}
	if deadline := annotatedTime(d, v1alpha1.AnnotationSendDeadline); deadline != nil && markerOfAttempt(d) &&
		(d.Status.SendDeadline == nil || deadline.After(d.Status.SendDeadline.Time)) {
		d.Status.SendDeadline = deadline
	}
}

// markerOfAttempt says whether the send annotations belong to the current
// attempt (no attempt annotation: the first).
func markerOfAttempt(d *v1alpha1.Delegation) bool {
	n := int32(1)
	if v, ok := d.Annotations[v1alpha1.AnnotationSendAttempt]; ok {
		parsed, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return true // unreadable: a send may have been made
		}
		n = int32(parsed)
	}
	return n == delegation.AttemptOf(&d.Status)
}

// annotatedTime reads an RFC 3339 annotation; nil when absent or unreadable
// (a send without a readable deadline counts from its marker).
func annotatedTime(d *v1alpha1.Delegation, name string) *metav1.Time {
	v, ok := d.Annotations[name]
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// sentTerms are what a send was made under, kept in memory from the
// dispatch until its answer is applied: the status record is taken from
// them, not from the object at that time (its send marker may have been
// removed, spec.timeout changed).
type sentTerms struct {
	// marker is the send marker the request was made after.
	marker *metav1.Time
	// deadline is the deadline the agent was given.
	deadline *metav1.Time
}

// recordSentTerms keeps the send marker a send was made after, should the
// annotation be gone by the time its answer is applied (a user removed
// it): the status write that follows records it, and from then on status
// is what says a send was made, so the send is looked up, never made again.
func recordSentTerms(st *v1alpha1.DelegationStatus, sent sentTerms) {
	if st.SendStarted == nil && sent.marker != nil {
		st.SendStarted = sent.marker.DeepCopy()
		if st.TaskID == "" && st.SendResult == "" {
			st.SendResult = v1alpha1.SendInFlight
		}
	}
}
