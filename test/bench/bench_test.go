/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

const children = 100

// tree creates a group root with n children sending text to the worker.
func tree(b *testing.B, ns string, n int, text string, mutate func(*v1alpha1.Delegation)) {
	b.Helper()
	ctx := context.Background()
	if err := kube.Create(ctx, &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"}}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		d := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("child-%03d", i)},
			Spec: v1alpha1.DelegationSpec{ParentRef: &v1alpha1.LocalRef{Name: "root"}, AgentRef: &v1alpha1.LocalRef{Name: "worker"},
				Message: &v1alpha1.Message{Text: text}}}
		if mutate != nil {
			mutate(d)
		}
		if err := kube.Create(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}

// phases counts the children by phase.
func phases(b *testing.B, ns string) map[v1alpha1.Phase]int {
	var l v1alpha1.DelegationList
	if err := kube.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	out := map[v1alpha1.Phase]int{}
	for _, d := range l.Items {
		if d.Name != "root" {
			out[d.Status.Phase]++
		}
	}
	return out
}

// From creation to every child Succeeded: send, follow, settle.
func BenchmarkSendAndSettle(b *testing.B) {
	for range b.N {
		ns := newNamespace(b)
		start := time.Now()
		tree(b, ns, children, "quick steps=1 delay=0s spend=1", nil)
		waitFor(b, 5*time.Minute, func() bool { return phases(b, ns)[v1alpha1.PhaseSucceeded] == children })
		elapsed := time.Since(start)
		b.ReportMetric(float64(children)/elapsed.Seconds(), "tasks/s")
		b.ReportMetric(float64(elapsed.Milliseconds()), "ms-total")
	}
}

// From spec.cancel on the root to CancelTask received for every child.
func BenchmarkCascadeCancel(b *testing.B) {
	for range b.N {
		ns := newNamespace(b)
		tree(b, ns, children, "forever delay=1s", nil)
		waitFor(b, 5*time.Minute, func() bool { return phases(b, ns)[v1alpha1.PhaseRunning] == children })
		before := agent.Count("CancelTask")
		root := &v1alpha1.Delegation{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "root"}, root); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(root.DeepCopy())
		root.Spec.Cancel = true
		start := time.Now()
		if err := kube.Patch(context.Background(), root, patch); err != nil {
			b.Fatal(err)
		}
		waitFor(b, 5*time.Minute, func() bool { return agent.Count("CancelTask")-before >= children })
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-cancel-all")
	}
}

// From deleting the root to CancelTask received for every child: children
// cancel as soon as the parent's deletionTimestamp appears, without waiting
// for the garbage collector (which paces itself at 20 deletions/s).
func BenchmarkDeleteParentCancelsChildren(b *testing.B) {
	for range b.N {
		ns := newNamespace(b)
		tree(b, ns, children, "forever delay=1s", nil)
		waitFor(b, 5*time.Minute, func() bool { return phases(b, ns)[v1alpha1.PhaseRunning] == children })
		before := agent.Count("CancelTask")
		root := &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"}}
		start := time.Now()
		if err := kube.Delete(context.Background(), root, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			b.Fatal(err)
		}
		waitFor(b, 5*time.Minute, func() bool { return agent.Count("CancelTask")-before >= children })
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-cancel-all")
		waitFor(b, 5*time.Minute, func() bool { return len(phases(b, ns)) == 0 })
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-until-all-deleted")
	}
}

// What a lease renewal costs the API server: renewals seen at the agent
// against resourceVersion changes of the leased Delegations.
func BenchmarkLeaseRenewalWrites(b *testing.B) {
	const leased = 20
	for range b.N {
		ns := newNamespace(b)
		tree(b, ns, leased, "forever delay=10m spend=0", func(d *v1alpha1.Delegation) {
			d.Spec.Lease = &v1alpha1.LeaseSpec{TTL: metav1.Duration{Duration: 3 * time.Second}}
		})
		waitFor(b, 5*time.Minute, func() bool {
			var l v1alpha1.DelegationList
			_ = kube.List(context.Background(), &l, client.InNamespace(ns))
			granted := 0
			for _, d := range l.Items {
				if d.Status.Lease != nil && d.Status.Lease.Granted {
					granted++
				}
			}
			return granted == leased
		})
		versions := func() map[string]string {
			var l v1alpha1.DelegationList
			_ = kube.List(context.Background(), &l, client.InNamespace(ns))
			m := map[string]string{}
			for _, d := range l.Items {
				m[d.Name] = d.ResourceVersion
			}
			return m
		}
		rvBefore, getsBefore := versions(), agent.Count("GetTask")
		time.Sleep(5 * time.Second)
		rvAfter, renewals := versions(), agent.Count("GetTask")-getsBefore
		writes := 0
		for name, rv := range rvAfter {
			if name != "root" && rvBefore[name] != rv {
				writes++
			}
		}
		b.ReportMetric(float64(renewals), "renewals")
		b.ReportMetric(float64(writes)/float64(max(renewals, 1)), "writes/renewal")
	}
}
