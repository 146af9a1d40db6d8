/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// writeLog notes the operator's writes of Delegations, by name: "patch" for
// the object, "patch/status" for its status.
type writeLog struct {
	mu     sync.Mutex
	writes map[string][]string
}

func (w *writeLog) note(name, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes[name] = append(w.writes[name], what)
}

func (w *writeLog) of(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes[name]...)
}

// logWrites wraps the reconciler's client so the test sees its writes.
func logWrites(r *DelegationReconciler) *writeLog {
	w := &writeLog{writes: map[string][]string{}}
	r.Client = interceptor.NewClient(noWatch{r.Client}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := o.(*v1alpha1.Delegation); ok {
				w.note(o.GetName(), "patch")
			}
			return c.Patch(ctx, o, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := o.(*v1alpha1.Delegation); ok {
				w.note(o.GetName(), "patch/"+sub)
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	return w
}

// noWatch lets the manager's client (which does not watch) be wrapped by
// an interceptor.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, apierrors.NewMethodNotSupported(v1alpha1.GroupVersion.WithResource("delegations").GroupResource(), "watch")
}

// Deleting a settled Delegation costs one write, the finalizer's removal:
// the deletion bumps the generation, and the conditions' observedGeneration
// alone is not worth a status write of an object about to go.
func TestDeletingASettledDelegationWritesOnlyItsFinalizer(t *testing.T) {
	var writes *writeLog
	e := setupWithReconciler(t, testOptions(), func(r *DelegationReconciler) { writes = logWrites(r) })
	e.create(e.task("done", "quick"))
	e.waitPhase("done", v1alpha1.PhaseSucceeded)
	before := len(writes.of("done"))
	e.g.Expect(k8sClient.Delete(context.Background(), e.get("done"))).To(Succeed())
	e.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "done"}, &v1alpha1.Delegation{}))
	}, eventually, tick).Should(BeTrue())
	e.g.Expect(writes.of("done")[before:]).To(Equal([]string{"patch"}), "only the finalizer's removal")
}
