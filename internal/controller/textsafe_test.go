/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Agent text reaches status with its control characters escaped: kubectl
// describe, dashboards and GitOps tools show status as it is, and an escape
// sequence would run in the terminal of whoever looks.
func TestAgentTextReachesStatusEscaped(t *testing.T) {
	e := setup(t)
	e.create(e.task("echo", "tell \x1b[2J\u009b31m\u202eright to left\ttab\nline"))
	e.create(e.task("broken", "fail-escapes"))

	d := e.waitPhase("echo", v1alpha1.PhaseSucceeded)
	e.g.Expect(d.Status.Result).NotTo(BeNil())
	e.g.Expect(d.Status.Result.Text).To(Equal(`echo: tell ^[[2J\u009b31m\u202eright to left` + "\ttab\nline"))

	d = e.waitPhase("broken", v1alpha1.PhaseFailed)
	e.g.Expect(d.Status.Outcome.Message).To(ContainSubstring(`^[]52;c;aGk=^Git^[[2J broke\u202e`))
	for _, text := range []string{d.Status.Outcome.Message, d.Status.Result.Text} {
		e.g.Expect(text).NotTo(ContainSubstring("\x1b"))
		e.g.Expect(text).NotTo(ContainSubstring("\u202e"))
	}
}
