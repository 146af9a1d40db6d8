/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegationtree"
)

// Sources of the view, as the page names them in problems.
const (
	sourceDelegations = "delegations"
	sourceEvents      = "events"
)

// delegationEvents selects, on the API server, the Events about Delegations,
// so the view never holds the Events of every Pod of the cluster.
const delegationEvents = "regarding.kind=Delegation"

// listWatch lists and watches one kind with the user's client, in ns ("" for
// all), with a field selector ("" for none).
func listWatch(c client.WithWatch, ns string, list client.ObjectList, fields string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			opts.FieldSelector = fields
			return l, c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = fields
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), &client.ListOptions{Namespace: ns, Raw: &opts})
		},
	}
}

// watchAll feeds the hub from two informers, Delegations and their Events,
// until ctx ends. A watch the user may not make (no RBAC to list Events, say)
// is shown on the page as a problem; the informer keeps retrying with its
// own backoff, and the problem clears once a list succeeds.
func watchAll(ctx context.Context, c client.WithWatch, ns string, h *hub) error {
	delegations := cache.NewSharedIndexInformer(listWatch(c, ns, &v1alpha1.DelegationList{}, ""), &v1alpha1.Delegation{}, 0, nil)
	events := cache.NewSharedIndexInformer(listWatch(c, ns, &eventsv1.EventList{}, delegationEvents), &eventsv1.Event{}, 0, nil)

	if _, err := delegations.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onDelegation(h, obj) },
		UpdateFunc: func(_, obj any) { onDelegation(h, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := untombstone(obj).(*v1alpha1.Delegation); ok {
				h.deleteNode(delegationtree.Key(d.Namespace, d.Name))
			}
		},
	}); err != nil {
		return err
	}
	if _, err := events.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { onEvent(h, obj) },
		UpdateFunc: func(_, obj any) { onEvent(h, obj) },
		DeleteFunc: func(obj any) {
			if ev, ok := untombstone(obj).(*eventsv1.Event); ok {
				if e, ok := eventOf(ev); ok {
					h.deleteEvent(e)
				}
			}
		},
	}); err != nil {
		return err
	}
	for source, inf := range map[string]cache.SharedIndexInformer{sourceDelegations: delegations, sourceEvents: events} {
		if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			if !errors.Is(err, context.Canceled) {
				h.problem(source, fmt.Sprintf("cannot watch %s: %v", source, err))
			}
		}); err != nil {
			return err
		}
	}

	var wg sync.WaitGroup
	for source, inf := range map[string]cache.SharedIndexInformer{sourceDelegations: delegations, sourceEvents: events} {
		wg.Go(func() { inf.RunWithContext(ctx) })
		wg.Go(func() {
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				h.problem(source, "")
			}
		})
	}
	wg.Wait()
	return nil
}

func onDelegation(h *hub, obj any) {
	if d, ok := obj.(*v1alpha1.Delegation); ok {
		h.problem(sourceDelegations, "") // a change came through: the watch works again
		h.upsertNode(nodeOf(d))
	}
}

func onEvent(h *hub, obj any) {
	if ev, ok := obj.(*eventsv1.Event); ok {
		h.problem(sourceEvents, "")
		if e, ok := eventOf(ev); ok {
			h.upsertEvent(e)
		}
	}
}

// untombstone unwraps an object the informer lost track of before its delete.
func untombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
