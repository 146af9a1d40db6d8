/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package agentkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	tethera2a "github.com/tether-dev/tether/internal/a2a"
)

// Lease is how long a task may live without a renewal.
type Lease struct {
	TaskID    a2a.TaskID
	TTL       time.Duration
	ExpiresAt time.Time
	// Owner is the task store's owner of the task, so the sweeper cancels
	// the task as its owner.
	Owner string
}

// LeaseStore keeps leases. The default lives in memory; replicas of one agent
// that share a task store should share a LeaseStore too, so a renewal served by
// one replica holds off the sweeper of another.
type LeaseStore interface {
	// Put grants or replaces the lease of a task.
	Put(ctx context.Context, lease Lease) error
	// Get returns the lease of a task; false when there is none.
	Get(ctx context.Context, id a2a.TaskID) (Lease, bool, error)
	// Renew moves a live lease to now+TTL. A lapsed lease is not revived: it
	// is returned unchanged with false, and the sweeper cancels its task.
	Renew(ctx context.Context, id a2a.TaskID, now time.Time) (Lease, bool, error)
	// Delete forgets a lease; deleting a missing one is not an error.
	Delete(ctx context.Context, id a2a.TaskID) error
	// Expired lists the leases that lapsed before now.
	Expired(ctx context.Context, now time.Time) ([]Lease, error)
}

// NewMemoryLeaseStore returns a LeaseStore for a single process.
func NewMemoryLeaseStore() LeaseStore {
	return &memoryLeaseStore{leases: map[a2a.TaskID]Lease{}}
}

type memoryLeaseStore struct {
	mu     sync.Mutex
	leases map[a2a.TaskID]Lease
}

func (s *memoryLeaseStore) Put(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[l.TaskID] = l
	return nil
}

func (s *memoryLeaseStore) Get(_ context.Context, id a2a.TaskID) (Lease, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[id]
	return l, ok, nil
}

func (s *memoryLeaseStore) Renew(_ context.Context, id a2a.TaskID, now time.Time) (Lease, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[id]
	if !ok || !now.Before(l.ExpiresAt) {
		return l, false, nil
	}
	l.ExpiresAt = now.Add(l.TTL)
	s.leases[id] = l
	return l, true, nil
}

func (s *memoryLeaseStore) Delete(_ context.Context, id a2a.TaskID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, id)
	return nil
}

func (s *memoryLeaseStore) Expired(_ context.Context, now time.Time) ([]Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Lease
	for _, l := range s.leases {
		if !now.Before(l.ExpiresAt) {
			out = append(out, l)
		}
	}
	return out, nil
}

// leaseRequest reads the lease a SendMessage asks for; nil when it asks for none.
// A malformed or out-of-range request is an InvalidParams error, so the client
// learns at once instead of getting a task that never expires.
func leaseRequest(msg *a2a.Message, reqMeta map[string]any, maxTTL time.Duration) (*time.Duration, error) {
	raw, ok := extensionData(msg, reqMeta, tethera2a.LeaseExtensionURI)
	if !ok {
		return nil, nil
	}
	var req tethera2a.LeaseRequestMetadata
	if err := fromMeta(raw, &req); err != nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "lease extension metadata: "+err.Error())
	}
	ttl := time.Duration(req.TTLSeconds * float64(time.Second))
	if ttl < tethera2a.MinLeaseTTL || ttl > maxTTL {
		return nil, a2a.NewError(a2a.ErrInvalidParams,
			fmt.Sprintf("lease ttlSeconds %v is outside %v..%v", req.TTLSeconds, tethera2a.MinLeaseTTL, maxTTL))
	}
	return &ttl, nil
}

func leaseGrantMeta(l Lease) any {
	return toMeta(tethera2a.LeaseGrantMetadata{ExpiresAt: l.ExpiresAt.UTC()})
}
