/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
//
// Only a write this process knows landed, checked after it, makes it the
// leader: a Lease that names this process proves nothing by itself (a write
// that timed out may have landed after an overlapping shard took its own,
// and a give-back may have failed). So a renewal skips the checks only
// while every write since the checked one succeeded; after any failed write
// the next one is checked again as an acquisition, and a Lease that names
// this process while it may not lead is given back at every retry until the
// give-back lands.
type exclusiveLock struct {
	resourcelock.Interface
	shard     Shard
	namespace string
	name      string
	leases    client.Reader
	now       func() time.Time

	mu sync.Mutex
	// leading: this process took the Lease with the exclusion checked after
	// its write, and every write since succeeded.
	leading bool
	// namesUs: the record last read names this process.
	namesUs bool
	// heldUntil is how long the last write that made or kept this process
	// the leader holds the Lease for, counted from before that write was
	// sent: no other process can take it earlier (it counts the duration
	// from when it saw the write). Zero once a release is being written.
	heldUntil time.Time
}

// Holds reports whether this process leads and its Lease cannot have been
// taken by another process: calls to agents are checked against it as they
// leave (agentio.Fence).
func (l *exclusiveLock) Holds() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading && l.now().Before(l.heldUntil)
}

func (l *exclusiveLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.namesUs = rec.HolderIdentity == l.Identity()
		l.leading = l.leading && l.namesUs
		l.mu.Unlock()
	}
	return rec, raw, err
}

func (l *exclusiveLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := l.mayAcquire(ctx); err != nil {
		return err
	}
	sent := l.now()
	if err := l.Interface.Create(ctx, ler); err != nil {
		return err
	}
	return l.acquired(ctx, ler, sent)
}

func (l *exclusiveLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	renewal, namesUs := l.leading, l.namesUs
	l.mu.Unlock()
	if ler.HolderIdentity != l.Identity() { // a release: the fence closes before it is written
		l.setLeading(false, time.Time{}, ler)
		return l.Interface.Update(ctx, ler)
	}
	if renewal {
		sent := l.now()
		err := l.Interface.Update(ctx, ler)
		l.setLeading(err == nil, sent, ler)
		return err
	}
	if err := l.mayAcquire(ctx); err != nil {
		if namesUs { // an earlier write landed after all, or a give-back failed
			return errors.Join(err, l.giveBack(ctx, ler))
		}
		return err
	}
	sent := l.now()
	if err := l.Interface.Update(ctx, ler); err != nil {
		return err
	}
	return l.acquired(ctx, ler, sent)
}

// acquired checks again after the write (sent at sent) and gives the Lease
// back when an overlapping shard of another count took its own in the
// meantime.
func (l *exclusiveLock) acquired(ctx context.Context, ler resourcelock.LeaderElectionRecord, sent time.Time) error {
	err := l.mayAcquire(ctx)
	if err == nil {
		l.setLeading(true, sent, ler)
		return nil
	}
	return errors.Join(err, l.giveBack(ctx, ler))
}

// giveBack writes the Lease free; a failure is retried by the elector's next
// turn (the Lease still names this process, which does not lead).
func (l *exclusiveLock) giveBack(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	release := resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, LeaderTransitions: ler.LeaderTransitions,
		AcquireTime: ler.AcquireTime, RenewTime: ler.RenewTime}
	if err := l.Interface.Update(ctx, release); err != nil {
		return fmt.Errorf("giving the Lease %s back (tried again at the next turn): %w", l.name, err)
	}
	l.mu.Lock()
	l.namesUs = false
	l.mu.Unlock()
	return nil
}

// mayAcquire is nil when no Lease of another shard count that overlaps
// this shard is held; otherwise its error names the first one found.
func (l *exclusiveLock) mayAcquire(ctx context.Context) error {
	list := &coordinationv1.LeaseList{}
	if err := l.leases.List(ctx, list, client.InNamespace(l.namespace), client.HasLabels{LabelShard}); err != nil {
		return fmt.Errorf("listing the shard Leases before taking %s: %w", l.name, err)
	}
	leases, err := l.withUnshardedLease(ctx, list.Items)
	if err != nil {
		return err
	}
	for i := range leases {
		lease := &leases[i]
		other, ok := leaseShard(lease)
		if lease.Name == l.name || !ok || other.Count == l.shard.Count || !other.Overlaps(l.shard) || !held(lease, l.now()) {
			continue
		}
		return fmt.Errorf("shard %s waits for shard %s (Lease %s, held by %s) to let go of the namespaces they share",
			l.shard, other, lease.Name, *lease.Spec.HolderIdentity)
	}
	return nil
}

// withUnshardedLease adds the Lease of an unsharded operator when it is not
// labelled: a build from before shards leads every namespace under that
// name without the labels, and a shard must wait for it as for shard 0 of 1.
func (l *exclusiveLock) withUnshardedLease(ctx context.Context, leases []coordinationv1.Lease) ([]coordinationv1.Lease, error) {
	if l.name == singleLeaseName || slices.ContainsFunc(leases, func(x coordinationv1.Lease) bool { return x.Name == singleLeaseName }) {
		return leases, nil
	}
	single := coordinationv1.Lease{}
	err := l.leases.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: singleLeaseName}, &single)
	if apierrors.IsNotFound(err) {
		return leases, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Lease %s of an unsharded operator before taking %s: %w", singleLeaseName, l.name, err)
	}
	return append(leases, single), nil
}

// leaseShard reads which shard a Lease elects (its label and annotation);
// the unlabelled Lease of an unsharded operator elects the one shard of 1.
func leaseShard(lease *coordinationv1.Lease) (Shard, bool) {
	if lease.Name == singleLeaseName && lease.Labels[LabelShard] == "" {
		return Shard{Index: 0, Count: 1}, true
	}
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

// setLeading records whether this process leads after a write sent at
// sent with record ler; leading, it holds the Lease for the record's
// duration from then.
func (l *exclusiveLock) setLeading(v bool, sent time.Time, ler resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = v
	l.heldUntil = time.Time{}
	if v {
		l.heldUntil = sent.Add(time.Duration(ler.LeaseDurationSeconds) * time.Second)
	}
}
