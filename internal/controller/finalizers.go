/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// removeFinalizer takes name off obj with a patch locked on the version obj
// was read at. A merge patch replaces the whole finalizers list, so one made
// from a copy that missed another controller's finalizer would drop that one
// too; with the lock such a patch fails with a conflict, and the next pass
// reads the object again.
func removeFinalizer(ctx context.Context, c client.Client, obj client.Object, name string) error {
	base, ok := obj.DeepCopyObject().(client.Object)
	if !ok || !controllerutil.RemoveFinalizer(obj, name) {
		return nil
	}
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}
