/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

func TestReplyRequestCarriesTheStructuredReply(t *testing.T) {
	g := NewWithT(t)
	const ext = "https://example.com/a2a/ext/tool-approval/v1"
	d := &v1alpha1.Delegation{}
	d.UID, d.Namespace, d.Name = "uid-1", "team", "asker"
	d.Status.TaskID, d.Status.ContextID = "task-1", "ctx-1"
	d.Spec.Replies = []v1alpha1.Reply{{Text: "first"}, {
		Text:  "approved",
		Parts: []v1alpha1.Part{{Data: &runtime.RawExtension{Raw: []byte(`{"ticket":42}`)}}},
		Metadata: map[string]apiextensionsv1.JSON{
			ext:                                  {Raw: []byte(`{"decision":"approved"}`)},
			"https://tether.dev/a2a/delegation":  {Raw: []byte(`"other-namespace/victim"`)},
			"https://tether.dev/anything-at-all": {Raw: []byte(`1`)},
		},
		Extensions: []string{ext},
	}}

	req := replyRequest(d, 1)
	g.Expect(req.MessageID).To(Equal(delegation.MessageID("uid-1", 1)))
	g.Expect(req.TaskID).To(Equal("task-1"))
	g.Expect(req.ContextID).To(Equal("ctx-1"))
	g.Expect(req.Text).To(Equal("approved"))
	g.Expect(req.Parts).To(HaveLen(1))
	g.Expect(string(req.Parts[0].Data)).To(Equal(`{"ticket":42}`))
	g.Expect(req.Extensions).To(Equal([]string{ext}))
	g.Expect(req.Metadata).To(HaveLen(2), "the operator's reserved keys are never taken from a reply")
	g.Expect(req.Metadata[ext]).To(Equal(json.RawMessage(`{"decision":"approved"}`)))
	g.Expect(req.Metadata).To(HaveKeyWithValue("https://tether.dev/a2a/delegation", "team/asker"),
		"the claim is the operator's own, for the Delegation sending the reply")
	g.Expect(replyRequest(d, 0).Metadata).To(Equal(map[string]any{"https://tether.dev/a2a/delegation": "team/asker"}),
		"a reply without metadata carries the claim too")
}
