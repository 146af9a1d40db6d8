/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// CacheOptions are the operator's cache settings: the namespaces it
// watches (every namespace when none is named) and, for every cached
// object, only what a reconciler reads. Nothing is written back from a
// cached copy but as a patch against that same copy, so a field left out
// of the cache is left alone on the server.
func CacheOptions(namespaces ...string) cache.Options {
	o := cache.Options{
		DefaultTransform: stripUnread,
		ByObject:         map[client.Object]cache.ByObject{&v1alpha1.Delegation{}: {Transform: stripDelegation}},
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

var _ toolscache.TransformFunc = stripUnread

// stripUnread drops what no reconciler reads of any object: managedFields,
// and the copy of the whole object `kubectl apply` keeps in an annotation
// (as large as the object's spec).
func stripUnread(in any) (any, error) {
	m, err := meta.Accessor(in)
	if err != nil {
		return in, nil // a tombstone: nothing to strip
	}
	if m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	delete(m.GetAnnotations(), corev1.LastAppliedConfigAnnotation)
	return in, nil
}

// stripDelegation is stripUnread, and for a settled Delegation also its
// result and the message it sent: a settled Delegation never sends again
// nor changes its result, and both are read by people (kubectl) from the
// API server, never by the operator from the cache. A settled Delegation
// may hold up to --result-text-limit of result and 64 KiB of message text.
func stripDelegation(in any) (any, error) {
	in, _ = stripUnread(in)
	d, ok := in.(*v1alpha1.Delegation)
	if !ok || !d.Status.Phase.Settled() {
		return in, nil
	}
	d.Status.Result = nil
	if m := d.Spec.Message; m != nil {
		// The context id stays: children may inherit it.
		d.Spec.Message = &v1alpha1.Message{ContextID: m.ContextID}
	}
	return in, nil
}
