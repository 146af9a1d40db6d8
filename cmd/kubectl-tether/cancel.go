/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// cancelPatch only ever sets the flag, so it needs no concurrency guard: cancel
// cannot be undone and every other field is left to whoever owns it.
var cancelPatch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))

// cancelDelegation sets spec.cancel and says what happens next.
func cancelDelegation(ctx context.Context, c client.Client, key client.ObjectKey) (string, error) {
	d := &v1alpha1.Delegation{}
	if err := c.Get(ctx, key, d); err != nil {
		return "", err
	}
	if d.Status.Phase.Settled() {
		return fmt.Sprintf("delegation %q is already %s; nothing to cancel", d.Name, d.Status.Phase), nil
	}
	if d.Spec.Cancel {
		return fmt.Sprintf("delegation %q: cancel already requested", d.Name), nil
	}
	if err := c.Patch(ctx, d, cancelPatch); err != nil {
		return "", err
	}
	return fmt.Sprintf("delegation %q: cancel requested; its task and every Cancel-policy child are cancelled", d.Name), nil
}
