/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package argocd ships the Argo CD health checks for tether's kinds, so tests
// (and anything that renders argocd-cm) read the very scripts users install.
package argocd

import _ "embed"

// DelegationHealth is the Argo CD health Lua for Delegations.
//
//go:embed health-delegation.lua
var DelegationHealth string

// AgentHealth is the Argo CD health Lua for Agents.
//
//go:embed health-agent.lua
var AgentHealth string

// argocd-cm keys under which Argo CD looks up a kind's health Lua.
const (
	DelegationHealthKey = "resource.customizations.health.delegation.tether.dev_Delegation"
	AgentHealthKey      = "resource.customizations.health.delegation.tether.dev_Agent"
)

// HealthChecks maps each argocd-cm key to its script.
func HealthChecks() map[string]string {
	return map[string]string{DelegationHealthKey: DelegationHealth, AgentHealthKey: AgentHealth}
}
