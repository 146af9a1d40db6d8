/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The leader writes its receiver's URL on the shard's Lease; a standby
// reads it there while that leader holds the Lease, and never a dead
// leader's URL once another process holds it.
func TestStandbyFindsTheLeadersReceiverOnTheLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg, scheme := startAPIServer(t, nil)
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	replica := func() *Setup {
		s := &Setup{Shard: Shard{Index: 1, Count: 2}, Flags: Flags{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second,
			RetryPeriod: 500 * time.Millisecond}, kube: kube, cfg: cfg}
		o := ctrl.Options{LeaderElection: true, LeaderElectionNamespace: "default"}
		g.Expect(s.Configure(&o)).To(Succeed())
		g.Expect(s.labelLease(ctx, "default")).To(Succeed())
		return s
	}
	leader, standby := replica(), replica()
	hold := func(holder string) {
		lease := &coordinationv1.Lease{}
		g.Expect(kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: leader.Shard.LeaseName()}, lease)).To(Succeed())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = ptr.To(holder), ptr.To[int32](6)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		g.Expect(kube.Update(ctx, lease)).To(Succeed())
	}

	_, err = standby.LeaderPushURL(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("no process holds")))

	hold(leader.identity)
	leader.PushEndpoint = func(context.Context) (string, error) { return "http://10.0.0.7:8082", nil }
	g.Expect(leader.advertisePush(ctx)).To(Succeed())
	g.Eventually(func() (string, error) { return standby.LeaderPushURL(ctx) }).WithTimeout(10 * time.Second).
		Should(Equal("http://10.0.0.7:8082"))

	hold("another-process") // the leader died, another took over and has not written its URL yet
	g.Eventually(func() error { _, err := standby.LeaderPushURL(ctx); return err }).WithTimeout(10 * time.Second).
		Should(MatchError(ContainSubstring("has not said where")))
}
