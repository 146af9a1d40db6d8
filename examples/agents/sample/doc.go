/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package sample holds the executors of the sample agents, so they can be
// served by the commands in examples/agents and by tests: Worker does a few
// steps and reports what it spent; Orchestrator fans a task out to workers
// through child Delegations.
package sample

// textPlain is the only mode the samples read and write.
const textPlain = "text/plain"
