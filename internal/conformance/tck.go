/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package conformance

import "strings"

// tckRequirements are the A2A TCK (github.com/a2aproject/a2a-tck)
// requirement ids a check matches, shown beside ours so a report reads
// against the TCK's. Checks of tether's own rules (the extensions, look-up
// by context, bounds) match none.
var tckRequirements = map[string][]string{
	CheckCardParses:     {"CARD-DISC-001"},
	CheckCardReachable:  {"CARD-PROTO-002"},
	CheckSendGetPrefix:  {"CORE-SEND-001", "CORE-GET-001"},
	CheckGetUnknownTask: {"CORE-GET-002"},
	CheckCancelWorking:  {"CORE-CANCEL-001"},
	CheckCancelFinished: {"CORE-CANCEL-002"},
	CheckGetHistory:     {"CORE-HIST-002"},
	CheckSubscribe:      {"STREAM-SUB-001", "STREAM-SUB-002", "STREAM-ORDER-001"},
	CheckVersionRefused: {"VER-SERVER-002"},
	CheckCardSignature:  {"CARD-SIGN-001", "CARD-SIGN-002"},
}

// tckIDs returns the TCK requirement ids of a check.
func tckIDs(id string) []string {
	if strings.HasPrefix(id, CheckSendGetPrefix) {
		id = CheckSendGetPrefix
	}
	return tckRequirements[id]
}
