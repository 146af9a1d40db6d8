/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestCancelDelegation(t *testing.T) {
	alreadyAsked := dlg("job", "worker", v1alpha1.PhaseRunning, time.Minute)
	alreadyAsked.Spec.Cancel = true
	running := dlg("job", "worker", v1alpha1.PhaseRunning, time.Minute)
	done := dlg("job", "worker", v1alpha1.PhaseFailed, time.Minute)
	tests := []struct {
		name        string
		d           v1alpha1.Delegation
		wantMsg     string
		wantPatches []string
	}{
		{"running", running,
			`delegation "job": cancel requested; its task and every Cancel-policy child are cancelled`,
			[]string{`{"spec":{"cancel":true}}`}},
		{"already asked", alreadyAsked, `delegation "job": cancel already requested`, nil},
		{"settled", done, `delegation "job" is already Failed; nothing to cancel`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			var patches []string
			c := fakeClient(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					data, _ := patch.Data(obj)
					patches = append(patches, string(data))
					return c.Patch(ctx, obj, patch, opts...)
				},
			}, &tc.d)
			key := client.ObjectKey{Namespace: "default", Name: "job"}

			msg, err := cancelDelegation(ctx, c, key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(msg).To(Equal(tc.wantMsg))
			g.Expect(patches).To(Equal(tc.wantPatches))
			stored := &v1alpha1.Delegation{}
			g.Expect(c.Get(ctx, key, stored)).To(Succeed())
			g.Expect(stored.Spec.Cancel).To(Equal(tc.d.Spec.Cancel || tc.wantPatches != nil))
		})
	}
}
