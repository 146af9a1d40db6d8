/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package shard

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/test/cluster"
)

// On the real API server, with ShardedListAndWatch on and off: the probe
// finds which filtering applies (on an empty cluster and on one with
// objects), and a cache built with NewInformer holds exactly the shard's
// Delegations, from the first list and through the watch.
func TestCacheHoldsOnlyTheShard(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	for _, tc := range []struct {
		name  string
		gates []string
		want  Filtering
	}{
		{"GateOnServerFilters", []string{cluster.ShardedListAndWatch}, ServerSide},
		{"GateOffClientFilters", nil, ClientSide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			cfg, scheme := startAPIServer(t, tc.gates)
			kube, err := client.New(cfg, client.Options{Scheme: scheme})
			g.Expect(err).NotTo(HaveOccurred())
			gvk := v1alpha1.GroupVersion.WithKind("Delegation")

			f, err := Probe(ctx, kube, gvk, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f).To(Equal(tc.want), "probe on a cluster without Delegations")

			namespaces := make([]string, 12)
			for i := range namespaces {
				namespaces[i] = fmt.Sprintf("team-%02d-prod", i)
				g.Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}})).To(Succeed())
				g.Expect(kube.Create(ctx, delegationIn(namespaces[i], "before"))).To(Succeed())
			}
			f, err = Probe(ctx, kube, gvk, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f).To(Equal(tc.want), "probe on a cluster with Delegations")

			s := Shard{Index: 1, Count: 3}
			var own []string
			for _, ns := range namespaces {
				if s.Owns(ns) {
					own = append(own, ns)
				}
			}
			g.Expect(own).NotTo(BeEmpty())
			g.Expect(len(own)).To(BeNumerically("<", len(namespaces)))

			if f == ServerSide { // the server itself answers with the shard only
				l := &v1alpha1.DelegationList{}
				g.Expect(kube.List(ctx, l, &client.ListOptions{Raw: &metav1.ListOptions{ShardSelector: s.Selector().String()}})).To(Succeed())
				g.Expect(namespacesOf(l)).To(ConsistOf(own))
			}

			c, err := cache.New(cfg, cache.Options{Scheme: scheme, NewInformer: s.NewInformer(f)})
			g.Expect(err).NotTo(HaveOccurred())
			_, err = c.GetInformer(ctx, &v1alpha1.Delegation{})
			g.Expect(err).NotTo(HaveOccurred())
			go func() { _ = c.Start(ctx) }()
			g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
			cached := func() []string {
				l := &v1alpha1.DelegationList{}
				g.Expect(c.List(ctx, l)).To(Succeed())
				names := make([]string, 0, len(l.Items))
				for _, d := range l.Items {
					names = append(names, d.Namespace+"/"+d.Name)
				}
				slices.Sort(names)
				return names
			}
			want := make([]string, 0, 2*len(own))
			for _, ns := range own {
				want = append(want, ns+"/before")
			}
			g.Expect(cached()).To(Equal(want), "after the first list")

			for _, ns := range namespaces {
				g.Expect(kube.Create(ctx, delegationIn(ns, "after"))).To(Succeed())
			}
			for _, ns := range own {
				want = append(want, ns+"/after")
			}
			slices.Sort(want)
			g.Eventually(cached).WithTimeout(30*time.Second).Should(Equal(want), "through the watch")
			g.Consistently(cached).WithTimeout(2 * time.Second).Should(Equal(want))
		})
	}
}

func startAPIServer(t *testing.T, gates []string) (*rest.Config, *runtime.Scheme) {
	t.Helper()
	bin, err := cluster.BinDir("")
	if err != nil {
		t.Fatal(err)
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin,
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cluster.EnableFeatureGates(env, gates...)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, scheme
}

func delegationIn(ns, name string) *v1alpha1.Delegation {
	return &v1alpha1.Delegation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.DelegationSpec{AgentRef: &v1alpha1.AgentRef{Name: "agent"}, Message: &v1alpha1.Message{Text: "hello"}}}
}

func namespacesOf(l *v1alpha1.DelegationList) []string {
	out := make([]string, 0, len(l.Items))
	for _, d := range l.Items {
		out = append(out, d.Namespace)
	}
	return out
}
