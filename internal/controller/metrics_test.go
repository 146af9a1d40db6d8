/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestMetricsMeasureRequestsPhasesAndCascades(t *testing.T) {
	e := setup(t)
	e.create(e.task("parent", "wait"))
	e.waitRunning("parent")
	e.create(e.task("child", "wait", childOf("parent")))
	e.waitRunning("child")
	e.update("parent", func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
	e.waitPhase("child", v1alpha1.PhaseCanceled)

	agent := e.ns + "/agent"
	e.g.Expect(testutil.CollectAndCount(a2aRequestDuration.MustCurryWith(map[string]string{"agent": agent}))).To(BeNumerically(">=", 3),
		"SendMessage, GetTask and CancelTask were measured for this agent")
	e.g.Expect(testutil.ToFloat64(cascadeCancels.WithLabelValues("ParentEnded"))).To(BeNumerically(">=", 1))

	// The phase gauge counts from the cache at scrape time.
	e.g.Eventually(func() string {
		out, _ := testutil.CollectAndFormat(phases, expfmt.TypeTextPlain, "tether_delegations")
		return string(out)
	}, eventually, tick).Should(ContainSubstring(`tether_delegations{namespace="` + e.ns + `",phase="Canceled"} 2`))
}
