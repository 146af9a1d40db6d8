/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package sample holds the executors of the sample agents, so they can be
// served by the commands in examples/agents and by tests: Worker does a few
// steps and reports what it spent; Orchestrator fans a task out to workers
// through child Delegations.
package sample

import "github.com/a2aproject/a2a-go/v2/a2a"

// textPlain is the only mode the samples read and write.
const textPlain = "text/plain"

// sampleCard is the card both samples are served with, around their one skill.
func sampleCard(name, description string, skill a2a.AgentSkill) *a2a.AgentCard {
	skill.Tags = []string{"sample"}
	return &a2a.AgentCard{
		Name:               name,
		Description:        description,
		Version:            "0.1.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{textPlain},
		DefaultOutputModes: []string{textPlain},
		Skills:             []a2a.AgentSkill{skill},
	}
}
