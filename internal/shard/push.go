/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The leader of a shard writes on its Lease where it receives push
// notifications, so its standbys can hand over the ones that reach them.
// The holder beside the URL keeps a dead leader's URL from being used once
// another process holds the Lease.
const (
	AnnotationPushURL    = "delegation.tether.dev/push-url"
	AnnotationPushHolder = "delegation.tether.dev/push-holder"
)

// leaderCacheFor is how long a standby reuses what it read of the Lease.
const leaderCacheFor = time.Second

// pushLeader is what a standby last read of its shard's leader.
type pushLeader struct {
	mu   sync.Mutex
	url  string
	err  error
	read time.Time
}

// Leading reports whether this process leads its shard.
func (s *Setup) Leading() bool { return s.isLeading.Load() }

// LeaderPushURL is where the shard's leader receives push notifications,
// as its Lease says; an error while no process holds the Lease or its
// holder has not written its URL yet.
func (s *Setup) LeaderPushURL(ctx context.Context) (string, error) {
	p := &s.pushLeader
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.read) >= leaderCacheFor {
		p.url, p.err = s.readLeaderPushURL(ctx)
		p.read = now
	}
	return p.url, p.err
}

func (s *Setup) readLeaderPushURL(ctx context.Context) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.leaseNamespace, Name: s.Shard.LeaseName()}, lease); err != nil {
		return "", err
	}
	if !held(lease, time.Now()) {
		return "", errors.New("no process holds the shard's Lease")
	}
	holder := *lease.Spec.HolderIdentity
	if lease.Annotations[AnnotationPushHolder] != holder || lease.Annotations[AnnotationPushURL] == "" {
		return "", fmt.Errorf("the shard's leader %s has not said where it receives notifications yet", holder)
	}
	return lease.Annotations[AnnotationPushURL], nil
}

// advertisePush writes this leader's receiver URL on the shard's Lease.
func (s *Setup) advertisePush(ctx context.Context) error {
	url, err := s.PushEndpoint(ctx)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.leaseNamespace, Name: s.Shard.LeaseName()}, lease); err != nil {
			return err
		}
		lease.Annotations = merge(lease.Annotations, map[string]string{AnnotationPushURL: url, AnnotationPushHolder: s.identity})
		return s.kube.Update(ctx, lease)
	})
}
