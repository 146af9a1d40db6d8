/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// AgentCredentialsLabel marks a Secret whose keys Agents of its namespace
// may use (as headers or CA bundles). The operator uses no other Secret: an
// Agent's author can only send what the namespace's owner marked for it, not
// any key of any Secret (a service account token, a Helm release, another
// application's credentials).
const AgentCredentialsLabel = "delegation.tether.dev/agent-credentials"

// ErrSecretNotMarked matches (errors.Is) a Secret without the consent label.
var ErrSecretNotMarked = errors.New("the Secret is not marked for Agents")

// checkSecretConsent refuses a Secret its namespace did not mark for Agents.
func checkSecretConsent(s *corev1.Secret) error {
	if s.Labels[AgentCredentialsLabel] == "true" {
		return nil
	}
	return fmt.Errorf("%w: label the Secret %s/%s with %s=true to let Agents of its namespace use it",
		ErrSecretNotMarked, s.Namespace, s.Name, AgentCredentialsLabel)
}
