/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/conformance"
	"github.com/tether-dev/tether/internal/delegation"
)

// conformanceTimeout bounds one run of the check.
const conformanceTimeout = 5 * time.Minute

// AgentConformanceReconciler runs the conformance check (kubectl tether
// check-agent) against Agents that ask for it in spec.conformance, and
// records the Conformant condition. It is a controller of its own with one
// worker: a check takes seconds to minutes and must never hold the Agent or
// Delegation workers, and Agents that do not ask for it are filtered out
// before they reach its queue.
type AgentConformanceReconciler struct {
	client.Client
	Connector *agentio.Connector
	// Options are the check's tuning (texts, ttls, bounds); the endpoint is
	// the Agent's.
	Options conformance.Options
	Now     func() time.Time
}

// Reconcile runs the check when it is due and records its result.
func (r *AgentConformanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.now()
	var agent v1alpha1.Agent
	if err := r.Get(ctx, req.NamespacedName, &agent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !agent.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	due, wait := delegation.ConformanceDue(&agent, now)
	if !due {
		// Turned off, or a condition list rewritten by another writer:
		// bring the condition in line with the recorded result.
		return ctrl.Result{RequeueAfter: wait}, r.record(ctx, req.NamespacedName, nil)
	}
	result := r.check(ctx, &agent)
	if err := r.record(ctx, req.NamespacedName, result); err != nil {
		return ctrl.Result{}, err
	}
	_, wait = delegation.ConformanceDue(withResult(&agent, result), r.now())
	return ctrl.Result{RequeueAfter: wait}, nil
}

// check runs the conformance check against the Agent's endpoint.
func (r *AgentConformanceReconciler) check(ctx context.Context, agent *v1alpha1.Agent) *v1alpha1.AgentConformanceStatus {
	log := logf.FromContext(ctx)
	st := &v1alpha1.AgentConformanceStatus{ObservedGeneration: agent.Generation}
	ep, err := r.Connector.Endpoint(ctx, agent, "")
	if err != nil {
		st.Summary = truncate("the check could not start: "+err.Error(), 1024)
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, conformanceTimeout)
	defer cancel()
	opts := r.Options
	if sig := agent.Spec.CardSignature; sig != nil {
		if ep.CardKeys, err = r.Connector.CardKeys(ctx, agent); err != nil {
			st.Summary = truncate("the check could not start: "+err.Error(), 1024)
			return st
		}
		opts.RequireSignature = sig.Required
	}
	opts.Endpoint = ep
	rep, err := conformance.Run(ctx, opts)
	if err != nil {
		st.Summary = truncate("the check could not start: "+err.Error(), 1024)
		return st
	}
	end := metav1.NewTime(r.now())
	st.LastCheckTime = &end
	counts := map[conformance.Status]int{}
	for _, res := range rep.Results {
		counts[res.Status]++
	}
	v := rep.Verdict
	st.Failed, st.NotRun = v.Failed[:min(32, len(v.Failed))], v.NotRun[:min(32, len(v.NotRun))]
	st.MessageOnly = rep.MessageOnly
	st.Verdict = truncate(v.Reason, 1024)
	st.Summary = fmt.Sprintf("run %s: %d pass, %d fail, %d not run, %d not advertised, %d skipped; kubectl tether check-agent %s shows each",
		rep.RunID, counts[conformance.Pass], counts[conformance.Fail], counts[conformance.NotRun], counts[conformance.NotAdvertised],
		counts[conformance.Skipped], agent.Name)
	log.Info("conformance check done", "conformant", v.Conformant, "failed", st.Failed, "notRun", st.NotRun, "run", rep.RunID)
	return st
}

// record writes the result (nil: keep the recorded one) and the condition
// derived from it, on a fresh read, so a result that took minutes to get
// is never lost to a conflict.
func (r *AgentConformanceReconciler) record(ctx context.Context, key client.ObjectKey, result *v1alpha1.AgentConformanceStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var agent v1alpha1.Agent
		if err := r.Get(ctx, key, &agent); err != nil {
			return client.IgnoreNotFound(err)
		}
		before := agent.DeepCopy()
		changed := false
		switch {
		case result != nil:
			agent.Status.Conformance, changed = result, true
		case !delegation.ConformanceWanted(&agent) && agent.Status.Conformance != nil:
			agent.Status.Conformance, changed = nil, true
		}
		if delegation.SetAgentConformant(&agent, r.now()) {
			changed = true
		}
		if !changed {
			return nil
		}
		err := r.Status().Patch(ctx, &agent, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func withResult(a *v1alpha1.Agent, st *v1alpha1.AgentConformanceStatus) *v1alpha1.Agent {
	cp := a.DeepCopy()
	cp.Status.Conformance = st
	return cp
}

func (r *AgentConformanceReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the controller; only Agents that ask for the
// check, or still carry a result or a condition to clear, reach its queue.
// (The Agent controller rewrites the condition list from its own read, which
// can bring back a condition this controller just removed.)
func (r *AgentConformanceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	concerned := predicate.NewPredicateFuncs(func(o client.Object) bool {
		a, ok := o.(*v1alpha1.Agent)
		return ok && (delegation.ConformanceWanted(a) || a.Status.Conformance != nil ||
			meta.FindStatusCondition(a.Status.Conditions, delegation.ConditionConformant) != nil)
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Agent{}, builder.WithPredicates(concerned)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Named("agent-conformance").
		Complete(r)
}
