/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Overlaps reports whether two shards, of the same count or not, share
// any namespace.
func (s Shard) Overlaps(o Shard) bool {
	start, end := s.Range()
	oStart, oEnd := o.Range()
	return sharding.HexLess(start, oEnd) && sharding.HexLess(oStart, end)
}

// exclusiveLock is a shard's Lease lock that takes the Lease only while no
// shard of another count leads a range overlapping this shard's.
//
// During a resharding (a rolling update from N to M shards) both counts run
// at once, and their Leases differ (tether-shard-i-of-N). Without this a
// new shard could start following a namespace its old owner still renews
// and reconciles. The old leader lets go when it stops: a SIGTERM releases
// its Lease at once, a dead one's Lease runs out after its duration (it
// stopped leading after the renew deadline, earlier still). Only then does
// a shard of the new count overlapping it acquire.
//
// Two candidates of different counts may look at the same moment and see
// each other's Lease free; so each checks again after its write and gives
// the Lease back if the other's is held now. Of two such writers at least
// one sees the other (the API server orders the writes), so two overlapping
// shards never lead at once; both may back off, and the retry period's
// jitter parts them.
type exclusiveLock struct {
	resourcelock.Interface
	shard     Shard
	namespace string
	name      string
	leases    client.Reader
	now       func() time.Time

	mu   sync.Mutex
	held bool // the last record read or written names this process
}

func (l *exclusiveLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.setHeld(err == nil && rec.HolderIdentity == l.Identity())
	return rec, raw, err
}

func (l *exclusiveLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := l.mayAcquire(ctx); err != nil {
		return err
	}
	if err := l.Interface.Create(ctx, ler); err != nil {
		return err
	}
	return l.acquired(ctx, ler)
}

func (l *exclusiveLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	acquiring := ler.HolderIdentity == l.Identity() && !l.isHeld()
	if !acquiring { // a renewal, or a release
		err := l.Interface.Update(ctx, ler)
		if err == nil {
			l.setHeld(ler.HolderIdentity == l.Identity())
		}
		return err
	}
	if err := l.mayAcquire(ctx); err != nil {
		return err
	}
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	return l.acquired(ctx, ler)
}

// acquired checks again after the write and gives the Lease back when an
// overlapping shard of another count took its own in the meantime.
func (l *exclusiveLock) acquired(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.setHeld(true)
	err := l.mayAcquire(ctx)
	if err == nil {
		return nil
	}
	release := resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, LeaderTransitions: ler.LeaderTransitions,
		AcquireTime: ler.AcquireTime, RenewTime: ler.RenewTime}
	if rerr := l.Interface.Update(ctx, release); rerr == nil {
		l.setHeld(false)
	}
	return err
}

// mayAcquire is nil when no Lease of another shard count that overlaps
// this shard is held; otherwise its error names the first one found.
func (l *exclusiveLock) mayAcquire(ctx context.Context) error {
	list := &coordinationv1.LeaseList{}
	if err := l.leases.List(ctx, list, client.InNamespace(l.namespace), client.HasLabels{LabelShard}); err != nil {
		return fmt.Errorf("listing the shard Leases before taking %s: %w", l.name, err)
	}
	for i := range list.Items {
		lease := &list.Items[i]
		other, ok := leaseShard(lease)
		if lease.Name == l.name || !ok || other.Count == l.shard.Count || !other.Overlaps(l.shard) || !held(lease, l.now()) {
			continue
		}
		return fmt.Errorf("shard %s waits for shard %s (Lease %s, held by %s) to let go of the namespaces they share",
			l.shard, other, lease.Name, *lease.Spec.HolderIdentity)
	}
	return nil
}

// leaseShard reads which shard a Lease elects (its label and annotation).
func leaseShard(lease *coordinationv1.Lease) (Shard, bool) {
	i, err1 := strconv.Atoi(lease.Labels[LabelShard])
	n, err2 := strconv.Atoi(lease.Annotations[AnnotationShards])
	s := Shard{Index: i, Count: n}
	return s, err1 == nil && err2 == nil && s.Validate() == nil
}

// held reports whether a Lease has a holder whose last renewal has not run
// out yet (a released Lease has no holder).
func held(lease *coordinationv1.Lease, now time.Time) bool {
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return false
	}
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return true // held, for how long unknown
	}
	return now.Before(spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second))
}

func (l *exclusiveLock) setHeld(v bool) {
	l.mu.Lock()
	l.held = v
	l.mu.Unlock()
}

func (l *exclusiveLock) isHeld() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}
