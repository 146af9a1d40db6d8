/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
)

// Target is what a send registers for this Delegation.
func (p *PushReceiver) Target(d *v1alpha1.Delegation) *a2a.PushTarget {
	return &a2a.PushTarget{URL: p.BaseURL + "/push/" + d.Namespace + "/" + d.Name, Token: p.token(d)}
}

// A notification token is bound to one send of one Delegation and expires:
//
//	<expiry, base 36 Unix seconds; 0: none>.<HMAC-SHA256(key, uid, send marker, expiry)>
//
// The UID keeps a recreated object of the same name from accepting its
// predecessor's notifications; the send marker (status.sendStarted) ties
// the token to the send that handed it out; the expiry is the task's
// deadline, when it has one. Whatever the expiry, a token is refused once
// the Delegation settled: nothing is left to follow.
const pushTokenVersion = "tether-push/v2"

// token is the token a send of d hands out.
func (p *PushReceiver) token(d *v1alpha1.Delegation) string {
	var exp int64
	if d.Status.Deadline != nil {
		exp = d.Status.Deadline.Unix()
	}
	return p.tokenFor(d, exp)
}

func (p *PushReceiver) tokenFor(d *v1alpha1.Delegation, exp int64) string {
	m := hmac.New(sha256.New, p.Key)
	marker := ""
	if at := sendStartedOf(d); at != nil {
		marker = at.UTC().Format(time.RFC3339)
	}
	_, _ = fmt.Fprintf(m, "%s\n%s\n%s\n%d", pushTokenVersion, d.UID, marker, exp)
	return strconv.FormatInt(exp, 36) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// acceptsToken checks a presented token against d at now: signed for this
// send of this Delegation, not expired, and the Delegation not settled.
func (p *PushReceiver) acceptsToken(d *v1alpha1.Delegation, presented string, now time.Time) bool {
	expText, _, ok := strings.Cut(presented, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(expText, 36, 64)
	if err != nil || exp < 0 {
		return false
	}
	if !hmac.Equal([]byte(presented), []byte(p.tokenFor(d, exp))) {
		return false
	}
	return (exp == 0 || now.Unix() < exp) && !d.Status.Phase.Settled()
}

// sendStartedOf is the send marker as status records it, or as the
// annotation shows it before the first status write.
func sendStartedOf(d *v1alpha1.Delegation) *metav1.Time {
	if d.Status.SendStarted != nil {
		return d.Status.SendStarted
	}
	return sendMarker(d)
}

func (p *PushReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/push/"), "/")
	if r.Method != http.MethodPost || !ok || !strings.HasPrefix(r.URL.Path, "/push/") {
		refuseUnread(w, "not found", http.StatusNotFound)
		return
	}
	// The token is checked from the headers, before any of the body is read.
	// An unknown name and a wrong token get the same answer, so callers
	// without a token learn nothing about which Delegations exist.
	var d v1alpha1.Delegation
	if err := p.Reader.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name}, &d); err != nil ||
		!p.acceptsToken(&d, a2a.PresentedPushToken(r), time.Now()) {
		refuseUnread(w, "bad notification token", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPushBodyBytes+1))
	if err != nil {
		refuseUnread(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if len(body) > maxPushBodyBytes {
		// Too large to check the task id: still a wake-up from the agent that
		// holds the token; the rest is not read.
		w.Header().Set("Connection", "close")
	} else if id := a2a.NotifiedTaskID(body); id != "" && d.Status.TaskID != "" && id != d.Status.TaskID {
		http.Error(w, "not this delegation's task", http.StatusBadRequest)
		return
	}
	if p.standby(r) {
		p.forward(w, r, body)
		return
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	p.notified(key, &d, body)
	w.WriteHeader(http.StatusNoContent)
}

// notified acts on a notification whose token verified. The ended task
// carried whole is the read's answer, and the end costs no GetTask. An
// artifact alone changes nothing status shows before the end: nothing is
// read (the end's read brings it). Anything else has a followed task read
// at once, and the read's answer wakes the Delegation; a task not followed
// yet (its send's answer not applied) is read as soon as it is, and the
// Delegation is woken now.
func (p *PushReceiver) notified(key types.NamespacedName, d *v1alpha1.Delegation, body []byte) {
	if ended := endIn(body, d.Status.TaskID); ended != nil && p.answer != nil && p.answer(key, ended) {
		return
	}
	if len(body) <= maxPushBodyBytes && a2a.NotifiedArtifactOnly(body) {
		return
	}
	if p.readNow != nil && p.readNow(key) {
		return
	}
	select {
	case p.events <- event.GenericEvent{Object: d}:
	default: // the controller is behind; this task's poll or renewal still comes
	}
}

// endIn is the ended task a notification body carries whole, when it is
// the Delegation's task; nil when the task must be read.
func endIn(body []byte, taskID string) *a2a.Task {
	if len(body) > maxPushBodyBytes || taskID == "" {
		return nil
	}
	if t := a2a.NotifiedEnd(body); t != nil && t.ID == taskID {
		return t
	}
	return nil
}

// refuseUnread answers without reading the body and closes the connection:
// otherwise net/http would read (and discard) up to 256 KiB of it to keep the
// connection alive.
func refuseUnread(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}
