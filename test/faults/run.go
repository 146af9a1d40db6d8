/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Delegations are n Delegations prefix-0… in ns to the Agent named agent,
// each with its timeout (the deadline a run is judged by).
func Delegations(ns, agent, prefix string, n int, timeout time.Duration) []*v1alpha1.Delegation {
	ds := make([]*v1alpha1.Delegation, n)
	for i := range ds {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ds[i] = &v1alpha1.Delegation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: agent},
				Message: &v1alpha1.Message{Text: NamePrefix + name},
				Timeout: &metav1.Duration{Duration: timeout}},
		}
	}
	return ds
}

// settlePoll is how often Settled lists the namespace.
const settlePoll = time.Second

// Settled lists the Delegations of ns once every one of them has ended, or
// when ctx ends (what there is then, with ctx's error).
func Settled(ctx context.Context, c client.Client, ns string) ([]v1alpha1.Delegation, error) {
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for {
		list := &v1alpha1.DelegationList{}
		err := c.List(ctx, list, client.InNamespace(ns))
		if err == nil && allSettled(list.Items) {
			return list.Items, nil
		}
		select {
		case <-ctx.Done():
			if err != nil { // ctx ended the list: list once more without it
				err = c.List(context.WithoutCancel(ctx), list, client.InNamespace(ns))
			}
			return list.Items, errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}

func allSettled(ds []v1alpha1.Delegation) bool {
	for i := range ds {
		if !ds[i].Status.Phase.Settled() {
			return false
		}
	}
	return true
}
