/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package objects reads and changes Delegations in one namespace the way the
// operator's tests need, against whichever API server a test runs.
package objects

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// Namespace is the Delegations of one namespace, read through Client (a
// client.WithWatch waits on watches; another reads every Poll).
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
	d := &v1alpha1.Delegation{}
	Until(g, n.Client, n.Timeout, n.Poll, client.ObjectKey{Namespace: n.Name, Name: name}, d, &v1alpha1.DelegationList{},
		func(d *v1alpha1.Delegation) error {
			if d.Status.Phase != phase {
				return fmt.Errorf("%s is %q, not %q: outcome %+v", name, d.Status.Phase, phase, d.Status.Outcome)
			}
			return nil
		})
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

// QuotaUse is a DelegationQuota's status.used as counted from the API
// server's objects: a task sent and not settled is in flight; one that
// has not sent and shows reason QuotaExceeded or ChildrenPerParentExceeded
// waits.
func (n Namespace) QuotaUse(g gomega.Gomega) v1alpha1.QuotaUsed {
	var list v1alpha1.DelegationList
	g.Expect(n.Client.List(context.Background(), &list, client.InNamespace(n.Name))).To(gomega.Succeed())
	var used v1alpha1.QuotaUsed
	for i := range list.Items {
		d := &list.Items[i]
		switch {
		case d.Status.Phase.Settled():
		case d.Status.TaskID != "":
			used.InFlight++
		case d.Status.Outcome != nil && (d.Status.Outcome.Reason == delegation.ReasonQuotaExceeded ||
			d.Status.Outcome.Reason == delegation.ReasonChildrenPerParentExceeded):
			used.Waiting++
		}
	}
	return used
}

// CancelRunning asks the first running task (sent, not settled, not asked
// to cancel yet) to cancel; it names it, or "" when none runs.
func (n Namespace) CancelRunning(g gomega.Gomega) string {
	var list v1alpha1.DelegationList
	g.Expect(n.Client.List(context.Background(), &list, client.InNamespace(n.Name))).To(gomega.Succeed())
	for _, d := range list.Items {
		if d.Status.TaskID != "" && !d.Status.Phase.Settled() && !d.Spec.Cancel {
			n.Update(g, d.Name, func(d *v1alpha1.Delegation) { d.Spec.Cancel = true })
			return d.Name
		}
	}
	return ""
}
