/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Filtering says where the shard's objects are picked out.
type Filtering string

const (
	// ServerSide: the API server filters by the shard selector on list and
	// watch; other shards' objects never reach the process.
	ServerSide Filtering = "server"
	// ClientSide: the server ignores the selector; the operator drops other
	// shards' objects from every list and watch before they enter the cache.
	ClientSide Filtering = "client"
)

// NewInformerFunc is the type of cache.Options.NewInformer.
type NewInformerFunc = func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

// NewInformer is a cache.Options.NewInformer that makes every informer
// hold only the shard's objects: with ServerSide it sets the shard
// selector on each list and watch, with ClientSide it drops the objects of
// other namespaces from each answer. The operator caches only namespaced
// kinds (Delegations, Agents); an object without a namespace is kept.
func (s Shard) NewInformer(f Filtering) NewInformerFunc {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(s.listWatch(f, lw), obj, resync, indexers)
	}
}

func (s Shard) listWatch(f Filtering, lw toolscache.ListerWatcher) *toolscache.ListWatch {
	inner := toolscache.ToListerWatcherWithContext(lw)
	if s.Count == 1 {
		return &toolscache.ListWatch{ListWithContextFunc: inner.ListWithContext, WatchFuncWithContext: inner.WatchWithContext}
	}
	if f == ServerSide {
		selector := s.Selector().String()
		return &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.ShardSelector = selector
				return inner.ListWithContext(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.ShardSelector = selector
				return inner.WatchWithContext(ctx, o)
			},
		}
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := inner.ListWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return list, s.keepOwn(list)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := inner.WatchWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if e.Type == watch.Bookmark || e.Type == watch.Error {
					return e, true
				}
				return e, s.ownsObject(e.Object)
			}), nil
		},
	}
}

// keepOwn removes other shards' items from a list in place.
func (s Shard) keepOwn(list runtime.Object) error {
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return fmt.Errorf("filtering a list for shard %s: %w", s, err)
	}
	kept := items[:0]
	for _, it := range items {
		if s.ownsObject(it) {
			kept = append(kept, it)
		}
	}
	return meta.SetList(list, kept)
}

func (s Shard) ownsObject(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		return true
	}
	return s.Owns(m.GetNamespace())
}
