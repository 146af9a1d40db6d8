/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package extensions embeds the JSON Schemas and test vectors of tether's A2A
// extensions (docs/extensions.md), so the tests and kubectl tether
// check-agent use the published files themselves, never a copy.
package extensions

import "embed"

// Files holds schemas/*.schema.json and vectors/*.json.
//
//go:embed schemas/*.schema.json vectors/*.json
var Files embed.FS
