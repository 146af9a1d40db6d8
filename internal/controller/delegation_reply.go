/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"encoding/json"
	"strings"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/delegation"
)

// reservedMetadataPrefix marks metadata keys only the operator writes.
const reservedMetadataPrefix = "https://tether.dev/"

// replyRequest builds the send of spec.replies[i] to the task waiting for
// input: its text, parts and metadata, with the extensions it names activated
// for this call only. The message id is derived from the UID and the index,
// so a retried reply is recognisable.
func replyRequest(d *v1alpha1.Delegation, i int) a2a.SendRequest {
	r := d.Spec.Replies[i]
	req := a2a.SendRequest{
		MessageID:  delegation.MessageID(string(d.UID), i),
		ContextID:  d.Status.ContextID,
		TaskID:     d.Status.TaskID,
		Text:       r.Text,
		Parts:      wireParts(r.Parts),
		Extensions: r.Extensions,
	}
	if len(r.Metadata) > 0 {
		req.Metadata = make(map[string]any, len(r.Metadata))
		for k, v := range r.Metadata {
			// Keys under https://tether.dev/ are the operator's (the delegation
			// identity claim lives there): a reply never carries them.
			if strings.HasPrefix(k, reservedMetadataPrefix) {
				continue
			}
			// JSON values pass through as they are (a2a keeps numbers exact).
			req.Metadata[k] = json.RawMessage(v.Raw)
		}
	}
	// A reply carries the claim of the Delegation sending it, as the first
	// message does: agents never take it from the task's history.
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	req.Metadata[a2a.DelegationMetadataKey] = d.Namespace + "/" + d.Name
	return req
}

// wireParts converts a message's or a reply's parts.
func wireParts(parts []v1alpha1.Part) []a2a.Part {
	out := make([]a2a.Part, 0, len(parts))
	for _, p := range parts {
		part := a2a.Part{Text: p.Text, URL: p.URL, MediaType: p.MediaType, Filename: p.Filename}
		if p.Data != nil {
			part.Data = p.Data.Raw
		}
		out = append(out, part)
	}
	return out
}
