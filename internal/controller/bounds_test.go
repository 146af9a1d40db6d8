/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Meter names are chosen by tenants and travel into every ledger above
// them, into metric labels and into agent requests: admission bounds them.
func TestAdmissionBoundsMeterNames(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	group := func(meters v1alpha1.Meters) *v1alpha1.Delegation {
		return &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "meters-"},
			Spec: v1alpha1.DelegationSpec{Budget: &v1alpha1.BudgetSpec{Meters: meters}}}
	}
	many := v1alpha1.Meters{}
	for i := range 17 {
		many[fmt.Sprintf("m%02d", i)] = 1
	}
	const badName = "budget meter names must be 1 to 63 letters, digits, '-', '_' or '.'"
	for name, tc := range map[string]struct {
		meters v1alpha1.Meters
		want   string
	}{
		"a 100,000-character name": {v1alpha1.Meters{strings.Repeat("m", 100_000): 1}, badName},
		"a 64-character name":      {v1alpha1.Meters{strings.Repeat("m", 64): 1}, badName},
		"an empty name":            {v1alpha1.Meters{"": 1}, badName},
		"a slash":                  {v1alpha1.Meters{"example.com/tokens": 1}, badName},
		"an escape sequence":       {v1alpha1.Meters{"a\x1b[2Jb": 1}, badName},
		"a trailing dash":          {v1alpha1.Meters{"tokens-": 1}, badName},
		"17 meters":                {many, "spec.budget.meters: Too many: 17: must have at most 16 items"},
	} {
		t.Run(name, func(t *testing.T) {
			err := k8sClient.Create(context.Background(), group(tc.meters))
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	ok := v1alpha1.Meters{strings.Repeat("m", 63): 1, "gpu.seconds": 2, "testMeter": 3, "usd_cents": 4, "t": 5}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), group(ok))).To(Succeed())
}
