/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"encoding/json"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// extensionData finds the data a client sent under an extension URI: in the
// message metadata or, failing that, in the request metadata (clients differ).
func extensionData(msg *a2a.Message, reqMeta map[string]any, uri string) (any, bool) {
	if msg != nil {
		if v, ok := msg.Metadata[uri]; ok {
			return v, true
		}
	}
	v, ok := reqMeta[uri]
	return v, ok
}

// fromMeta decodes a metadata value (already-decoded JSON) into out.
func fromMeta(raw any, out any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// toMeta turns v into plain JSON values (maps, float64, strings). Task stores
// copy metadata with encoding/gob, which only knows registered types.
func toMeta(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// extensionRequested reports whether the client activated uri with the
// A2A-Extensions header (X-A2A-Extensions for 0.3 is mapped onto it by the
// 0.3 transport). Values may be comma-separated.
func extensionRequested(callCtx *a2asrv.CallContext, uri string) bool {
	if callCtx == nil {
		return false
	}
	for _, v := range callCtx.Extensions().RequestedURIs() {
		for u := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(u) == uri {
				return true
			}
		}
	}
	return false
}
