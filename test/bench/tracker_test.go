/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// tracker is a plain informer on Delegations and ConfigMaps. It notes when
// each Delegation was first seen (the dispatch floor), when it first
// reached each phase, and how many updates each namespace's Delegations
// got (writes during a hold).
type tracker struct {
	mu         sync.Mutex
	delegation map[types.NamespacedName]*seenDelegation
	updates    map[string][]time.Time // namespace → update event times
	configMaps map[string]int         // namespace → ConfigMaps present
}

type seenDelegation struct {
	added   time.Time
	phase   v1alpha1.Phase
	reached map[v1alpha1.Phase]time.Time
}

func startTracker(ctx context.Context, t *testing.T, cfg *rest.Config, scheme *runtime.Scheme) (*tracker, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	tr := &tracker{delegation: map[types.NamespacedName]*seenDelegation{}, updates: map[string][]time.Time{}, configMaps: map[string]int{}}
	dl, err := c.GetInformer(ctx, &v1alpha1.Delegation{})
	if err != nil {
		return nil, err
	}
	if _, err := dl.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { tr.delegationChanged(o, false) },
		UpdateFunc: func(_, o any) { tr.delegationChanged(o, true) },
		DeleteFunc: tr.delegationGone,
	}); err != nil {
		return nil, err
	}
	cm, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return nil, err
	}
	if _, err := cm.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { tr.configMap(o, 1) },
		DeleteFunc: func(o any) { tr.configMap(o, -1) },
	}); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the informer did not sync")
	}
	return tr, nil
}

func (tr *tracker) delegationChanged(o any, update bool) {
	now := time.Now()
	d, ok := o.(*v1alpha1.Delegation)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
	s := tr.delegation[key]
	if s == nil {
		s = &seenDelegation{added: now, reached: map[v1alpha1.Phase]time.Time{}}
		tr.delegation[key] = s
	}
	if update {
		tr.updates[d.Namespace] = append(tr.updates[d.Namespace], now)
	}
	s.phase = d.Status.Phase
	if _, ok := s.reached[d.Status.Phase]; !ok {
		s.reached[d.Status.Phase] = now
	}
}

func (tr *tracker) delegationGone(o any) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	d, ok := o.(*v1alpha1.Delegation)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.delegation, types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
}

func (tr *tracker) configMap(o any, delta int) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	if cm, ok := o.(*corev1.ConfigMap); ok {
		tr.mu.Lock()
		tr.configMaps[cm.Namespace] += delta
		tr.mu.Unlock()
	}
}

// count is the number of Delegations in ns (all namespaces when empty)
// whose phase satisfies in (every one when nil).
func (tr *tracker) count(ns string, in func(v1alpha1.Phase) bool) int {
	return tr.countNamed(ns, "", in)
}

// countNamed is count for the Delegations whose name starts with prefix.
func (tr *tracker) countNamed(ns, prefix string, in func(v1alpha1.Phase) bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for k, s := range tr.delegation {
		if (ns == "" || k.Namespace == ns) && strings.HasPrefix(k.Name, prefix) && (in == nil || in(s.phase)) {
			n++
		}
	}
	return n
}

// names lists the Delegations of ns.
func (tr *tracker) names(ns string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for k := range tr.delegation {
		if k.Namespace == ns {
			out = append(out, k.Name)
		}
	}
	return out
}

// addedAt is when the informer first saw a Delegation.
func (tr *tracker) addedAt(ns, name string) (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.delegation[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return time.Time{}, false
	}
	return s.added, true
}

// reachedAt is when the informer first saw a Delegation in phase.
func (tr *tracker) reachedAt(ns, name string, phase v1alpha1.Phase) (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s, ok := tr.delegation[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return time.Time{}, false
	}
	at, ok := s.reached[phase]
	return at, ok
}

// lastReached is the latest time a Delegation of ns first reached phase.
func (tr *tracker) lastReached(ns string, phase v1alpha1.Phase) time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var last time.Time
	for k, s := range tr.delegation {
		if at, ok := s.reached[phase]; k.Namespace == ns && ok && at.After(last) {
			last = at
		}
	}
	return last
}

// updatesBetween counts update events of ns's Delegations in [from, to).
func (tr *tracker) updatesBetween(ns string, from, to time.Time) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, at := range tr.updates[ns] {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

func (tr *tracker) configMapsIn(ns string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.configMaps[ns]
}

func phaseIs(phases ...v1alpha1.Phase) func(v1alpha1.Phase) bool {
	return func(p v1alpha1.Phase) bool { return slices.Contains(phases, p) }
}

// plainInformerEnv, when set to a kubeconfig, makes the test binary a plain
// informer on every Delegation and nothing else: the footprint floor.
const plainInformerEnv = "BENCH_PLAIN_INFORMER_KUBECONFIG"

func runPlainInformer(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := c.GetInformer(ctx, &v1alpha1.Delegation{}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("the informer did not sync")
	}
	fmt.Fprintln(os.Stdout, "plain informer synced")
	select {} // until killed
}
