/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaseFaults sits in a candidate's client transport and breaks its Lease
// writes the way a network does: a write held back while something else
// happens, a write that lands but whose answer is lost, a write refused
// before it leaves.
type leaseFaults struct {
	rt http.RoundTripper
	mu sync.Mutex
	// beforeWrite runs once, before the next Lease write is sent.
	beforeWrite func()
	// loseAnswer: the next write lands, and its caller gets a timeout.
	loseAnswer bool
	// refuseGiveBacks: writes that free the Lease fail before they leave.
	refuseGiveBacks int
	// writes counts the Lease writes that reached the API server.
	writes int
}

var errLostAnswer = errors.New("injected: the answer to a Lease write was lost (client timeout)")

func (f *leaseFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut && req.Method != http.MethodPost {
		return f.rt.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var lease coordinationv1.Lease
	_ = json.Unmarshal(body, &lease)
	giveBack := lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == ""
	f.mu.Lock()
	before, lose := f.beforeWrite, f.loseAnswer
	f.beforeWrite, f.loseAnswer = nil, false
	refuse := giveBack && f.refuseGiveBacks > 0
	if refuse {
		f.refuseGiveBacks--
	}
	f.mu.Unlock()
	if refuse {
		return nil, errors.New("injected: a give-back of the Lease was refused before it left")
	}
	if before != nil {
		before()
	}
	resp, err := f.rt.RoundTrip(req)
	f.mu.Lock()
	f.writes++
	f.mu.Unlock()
	if err == nil && lose {
		_ = resp.Body.Close()
		return nil, errLostAnswer
	}
	return resp, err
}

// faultyLock is the exclusive lock the operator configures for shard s,
// its Lease writes going through faults.
func faultyLock(t *testing.T, g *WithT, cfg *rest.Config, kube client.Client, ns string, s Shard, faults *leaseFaults) resourcelock.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	// JSON bodies, so the faults can tell a give-back (no holder) by its body.
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { faults.rt = rt; return faults }
	setup := &Setup{Shard: s, Flags: Flags{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		kube: kube, cfg: cfg}
	o := ctrl.Options{LeaderElection: true, LeaderElectionNamespace: ns}
	g.Expect(setup.Configure(&o)).To(Succeed())
	g.Expect(setup.labelLease(context.Background(), ns)).To(Succeed())
	return o.LeaderElectionResourceLockInterface
}

// takeTurn does what the leader elector does on each retry once the Lease
// exists: read it, then write this candidate as its holder.
func takeTurn(ctx context.Context, l resourcelock.Interface) error {
	if _, _, err := l.Get(ctx); err != nil {
		return err
	}
	now := metav1.NewTime(time.Now())
	return l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: l.Identity(), LeaseDurationSeconds: 15,
		AcquireTime: now, RenewTime: now})
}

func holderOf(g *WithT, kube client.Client, ns string, s Shard) string {
	lease := &coordinationv1.Lease{}
	g.Expect(kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: s.LeaseName()}, lease)).To(Succeed())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// A Lease that names this process proves nothing after a failed write: the
// shard leads only through a write it knows landed and checked after it.
// Each case lets shard 0 of 3 take its Lease while shard 0 of 2's write is
// on its way, then breaks that write; 0 of 2 must not lead at its next turn
// (a renewal without the checks would), and it gives its Lease back.
func TestShardExclusionHoldsAfterFailedLeaseWrites(t *testing.T) {
	cfg, scheme := startAPIServer(t, nil)
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name       string
		breakWrite func(f *leaseFaults)
	}{
		{"the write landed but its answer was lost", func(f *leaseFaults) { f.loseAnswer = true }},
		{"the give-back after the write failed", func(f *leaseFaults) { f.refuseGiveBacks = 1 }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			oldFaults := &leaseFaults{}
			// Each case elects in a namespace of its own, so the Leases of
			// earlier cases take no part.
			ns := fmt.Sprintf("leases-%d", i)
			g.Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			old, next := Shard{Index: 0, Count: 2}, Shard{Index: 0, Count: 3}
			oldLock := faultyLock(t, g, cfg, kube, ns, old, oldFaults)
			nextLock := faultyLock(t, g, cfg, kube, ns, next, &leaseFaults{})

			tc.breakWrite(oldFaults)
			oldFaults.beforeWrite = func() {
				// Shard `next` looks while `old`'s write is on its way, finds
				// the Lease of `old` free and takes its own, checked.
				g.Expect(takeTurn(ctx, nextLock)).To(Succeed())
			}
			g.Expect(takeTurn(ctx, oldLock)).NotTo(Succeed(), "the first write of %s was broken", old)
			g.Expect(holderOf(g, kube, ns, next)).To(Equal(nextLock.Identity()), "%s leads", next)

			// The next turn of `old`: its Lease may name it, but `next` leads.
			err := takeTurn(ctx, oldLock)
			g.Expect(err).To(HaveOccurred(), "%s renewed its Lease while %s led", old, next)
			g.Expect(err.Error()).To(ContainSubstring("waits for shard " + next.String()))
			g.Expect(holderOf(g, kube, ns, old)).To(BeEmpty(), "the Lease of %s is given back", old)

			// `next` renews without a check of its own; `old` leads once it let go.
			g.Expect(takeTurn(ctx, nextLock)).To(Succeed())
			g.Expect(nextLock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})).To(Succeed())
			g.Expect(takeTurn(ctx, oldLock)).To(Succeed())
			g.Expect(holderOf(g, kube, ns, old)).To(Equal(oldLock.Identity()))
		})
	}
	t.Run("the Lease of an unsharded build is held", func(t *testing.T) { waitsForTheLeaseOfAnUnshardedBuild(t, cfg, kube) })
}

// The Lease of a build from before shards carries no shard labels; it leads
// every namespace, so no shard of a larger count leads while it is held.
func waitsForTheLeaseOfAnUnshardedBuild(t *testing.T, cfg *rest.Config, kube client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	holder, duration, now := "operator-of-an-earlier-build", int32(15), metav1.NewMicroTime(time.Now())
	unsharded := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: singleLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now}}
	g.Expect(kube.Create(ctx, unsharded)).To(Succeed())

	lock := faultyLock(t, g, cfg, kube, "default", Shard{Index: 1, Count: 3}, &leaseFaults{})
	err := takeTurn(ctx, lock)
	g.Expect(err).To(HaveOccurred(), "a shard led while the unsharded build's Lease was held")
	g.Expect(err.Error()).To(ContainSubstring(singleLeaseName))

	// The earlier build stops and releases its Lease: the shard leads.
	unsharded.Spec.HolderIdentity = nil
	g.Expect(kube.Update(ctx, unsharded)).To(Succeed())
	g.Expect(takeTurn(ctx, lock)).To(Succeed())
}

// The fence calls to agents are checked against: held after a checked
// write, for the Lease's duration from before that write was sent; closed
// as soon as a release is being written (before it lands), after a write
// whose answer was lost, and once the duration ran out without a renewal.
func TestHoldsIsTheFenceOfCallsToAgents(t *testing.T) {
	cfg, scheme := startAPIServer(t, nil)
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx := context.Background()
	faults := &leaseFaults{}
	lock := faultyLock(t, g, cfg, kube, "default", Shard{Index: 1, Count: 2}, faults).(*exclusiveLock)
	g.Expect(lock.Holds()).To(BeFalse(), "a candidate that never wrote holds nothing")

	g.Expect(takeTurn(ctx, lock)).To(Succeed())
	g.Expect(lock.Holds()).To(BeTrue(), "the leader holds its Lease")
	now := lock.now
	lock.now = func() time.Time { return now().Add(14 * time.Second) }
	g.Expect(lock.Holds()).To(BeTrue(), "within the 15 s from the last write")
	lock.now = func() time.Time { return now().Add(16 * time.Second) }
	g.Expect(lock.Holds()).To(BeFalse(), "15 s after the last write another process may hold it")
	lock.now = now

	g.Expect(takeTurn(ctx, lock)).To(Succeed(), "a renewal")
	g.Expect(lock.Holds()).To(BeTrue())
	faults.loseAnswer = true
	g.Expect(takeTurn(ctx, lock)).NotTo(Succeed())
	g.Expect(lock.Holds()).To(BeFalse(), "a renewal whose answer was lost proves nothing")
	g.Expect(takeTurn(ctx, lock)).To(Succeed(), "checked again as an acquisition")
	g.Expect(lock.Holds()).To(BeTrue())

	var heldDuringRelease bool
	faults.beforeWrite = func() { heldDuringRelease = lock.Holds() }
	g.Expect(lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1})).To(Succeed())
	g.Expect(heldDuringRelease).To(BeFalse(), "calls still left while the release was on its way")
	g.Expect(lock.Holds()).To(BeFalse())
}
