/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package objects reads and changes Delegations in one namespace the way the
// operator's tests need, against whichever API server a test runs.
package objects

import (
	"context"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
)

// Namespace is the Delegations of one namespace, read through Client.
type Namespace struct {
	Client  client.Client
	Name    string
	Timeout time.Duration
	Poll    time.Duration
}

// Get reads a Delegation that must exist.
func (n Namespace) Get(g gomega.Gomega, name string) *v1alpha1.Delegation {
	d := &v1alpha1.Delegation{}
	g.Expect(n.Client.Get(context.Background(), client.ObjectKey{Namespace: n.Name, Name: name}, d)).To(gomega.Succeed())
	return d
}

// WaitPhase waits for a phase and returns the Delegation in it.
func (n Namespace) WaitPhase(g gomega.Gomega, name string, phase v1alpha1.Phase) *v1alpha1.Delegation {
	var d *v1alpha1.Delegation
	g.Eventually(func(g gomega.Gomega) {
		d = n.Get(g, name)
		g.Expect(d.Status.Phase).To(gomega.Equal(phase), "%s: outcome %+v", name, d.Status.Outcome)
	}).WithTimeout(n.Timeout).WithPolling(n.Poll).Should(gomega.Succeed())
	return d
}

// Update changes a Delegation's spec, retrying on conflicts.
func (n Namespace) Update(g gomega.Gomega, name string, mutate func(*v1alpha1.Delegation)) {
	g.Eventually(func(g gomega.Gomega) {
		d := n.Get(g, name)
		mutate(d)
		g.Expect(n.Client.Update(context.Background(), d)).To(gomega.Succeed())
	}).WithTimeout(n.Timeout).WithPolling(n.Poll).Should(gomega.Succeed())
}
