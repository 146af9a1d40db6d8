/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tether-dev/tether/api/v1alpha1"
)

var askKey = client.ObjectKey{Namespace: "default", Name: "ask"}

func waitingForInput() *v1alpha1.Delegation {
	d := dlg("ask", "clarifier", v1alpha1.PhaseInputRequired, time.Minute, task("t-1"))
	d.Spec.Replies = replies("first")
	return &d
}

func TestAppendReply(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var patches []string
	c := fakeClient(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, _ := patch.Data(obj)
			patches = append(patches, string(data))
			return c.Patch(ctx, obj, patch, opts...)
		},
	}, waitingForInput())

	d, err := appendReply(ctx, c, askKey, v1alpha1.Reply{Text: "second"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Spec.Replies).To(Equal(replies("first", "second")))
	g.Expect(patches).To(HaveLen(1))
	g.Expect(patches[0]).To(MatchJSON(`{"metadata":{"resourceVersion":"999"},"spec":{"replies":[{"text":"first"},{"text":"second"}]}}`),
		"a merge patch guarded by the resourceVersion it was computed from")
	g.Expect(replyNote(d)).To(Equal(`delegation "ask": reply 2 queued; the operator sends it to the waiting task`))
}

func TestAppendReplyKeepsAConcurrentAppend(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	raced := false
	c := fakeClient(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if !raced {
				// Someone else appends between our read and our patch.
				raced = true
				other := &v1alpha1.Delegation{}
				g.Expect(c.Get(ctx, askKey, other)).To(Succeed())
				other.Spec.Replies = append(other.Spec.Replies, v1alpha1.Reply{Text: "theirs"})
				g.Expect(c.Update(ctx, other)).To(Succeed())
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}, waitingForInput())

	_, err := appendReply(ctx, c, askKey, v1alpha1.Reply{Text: "ours"})
	g.Expect(err).NotTo(HaveOccurred())
	stored := &v1alpha1.Delegation{}
	g.Expect(c.Get(ctx, askKey, stored)).To(Succeed())
	g.Expect(stored.Spec.Replies).To(Equal(replies("first", "theirs", "ours")))
}

func TestAppendReplyRefusesWhatCouldNeverBeSent(t *testing.T) {
	group := dlg("ask", "", v1alpha1.PhaseRunning, time.Minute)
	done := dlg("ask", "clarifier", v1alpha1.PhaseSucceeded, time.Minute)
	canceling := dlg("ask", "clarifier", v1alpha1.PhaseInputRequired, time.Minute, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	detaching := dlg("ask", "clarifier", v1alpha1.PhaseInputRequired, time.Minute, func(d *v1alpha1.Delegation) { d.Spec.Detach = true })
	tests := []struct {
		name    string
		d       *v1alpha1.Delegation
		wantErr string
	}{
		{"a group", &group, `delegation "ask" is a group: replies go to one of its tasks`},
		{"a settled task", &done, `delegation "ask" is Succeeded: a reply would never be sent`},
		{"a task being cancelled", &canceling, `delegation "ask" is being cancelled: a reply would never be sent`},
		{"a task being detached", &detaching, `delegation "ask" is being detached: a reply would never be sent`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fakeClient(interceptor.Funcs{}, tc.d)
			_, err := appendReply(context.Background(), c, askKey, v1alpha1.Reply{Text: "late"})
			g.Expect(err).To(MatchError(tc.wantErr))
			stored := &v1alpha1.Delegation{}
			g.Expect(c.Get(context.Background(), askKey, stored)).To(Succeed())
			g.Expect(stored.Spec.Replies).To(BeEmpty())
		})
	}
}

func TestReplyNoteWhileRunning(t *testing.T) {
	g := NewWithT(t)
	d := dlg("ask", "clarifier", v1alpha1.PhaseRunning, time.Minute)
	d.Spec.Replies = replies("a")
	g.Expect(replyNote(&d)).To(Equal(`delegation "ask" is Running: reply 1 is sent when the agent asks for input`))
}
