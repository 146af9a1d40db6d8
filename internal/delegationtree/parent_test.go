/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package delegationtree

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tether-dev/tether/api/v1alpha1"
)

func TestParentName(t *testing.T) {
	owner := func(kind, apiVersion, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, APIVersion: apiVersion, Name: name, Controller: ptr.To(controller)}
	}
	const gv = "delegation.tether.dev/v1alpha1"
	tests := []struct {
		name   string
		ref    *v1alpha1.LocalRef
		owners []metav1.OwnerReference
		want   string
	}{
		{name: "none"},
		{name: "parentRef", ref: &v1alpha1.LocalRef{Name: "p"}, want: "p"},
		{name: "parentRef wins over owners", ref: &v1alpha1.LocalRef{Name: "p"},
			owners: []metav1.OwnerReference{owner("Delegation", gv, "q", true)}, want: "p"},
		{name: "controller owner", owners: []metav1.OwnerReference{
			owner("Delegation", gv, "q", false), owner("Delegation", gv, "r", true)}, want: "r"},
		{name: "any Delegation owner", owners: []metav1.OwnerReference{owner("Delegation", gv, "q", false)}, want: "q"},
		{name: "other kinds are not parents", owners: []metav1.OwnerReference{
			owner("Job", "batch/v1", "j", true), owner("Delegation", "example.com/v1", "d", true)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &v1alpha1.Delegation{}
			d.Spec.ParentRef, d.OwnerReferences = tc.ref, tc.owners
			g.Expect(ParentName(d)).To(Equal(tc.want))
		})
	}
}
