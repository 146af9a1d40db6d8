/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations/finalizers,verbs=update

// Reconcile reads the Delegation, runs the phases of this pass (the state
// machine of internal/delegation chooses the step) and ends the pass in
// finishPass: one status write, then the task handed on.
func (r *DelegationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &v1alpha1.Delegation{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	deleting := !d.DeletionTimestamp.IsZero()
	if deleting {
		r.Scheduler.Untrack(req.NamespacedName)
		r.cascadeCancel(ctx, d, delegation.ReasonParentDeleted)
		if !controllerutil.ContainsFinalizer(d, v1alpha1.Finalizer) {
			return ctrl.Result{}, nil
		}
	}
	// A group holds a budget for its children from the start: it takes
	// the finalizer first. A task takes it with its send marker (one write).
	if base := d.DeepCopy(); !deleting && delegation.IsGroup(&d.Spec) && controllerutil.AddFinalizer(d, v1alpha1.Finalizer) {
		// A patch of the finalizer alone: an Update would write spec back as
		// Go serialises it and take it from its GitOps owner. The next pass
		// comes from the update event.
		return requeueOnConflict(ctrl.Result{}, r.Patch(ctx, d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
	}
	s := r.newPass(d)
	phases := []phase{r.reconcileParent, r.reconcileAgent, r.reconcileChildren, r.reconcileTask}
	if deleting {
		phases = []phase{r.reconcileParent, r.reconcileAgent, r.cancelOnDelete, r.releaseFinalizer}
	}
	res, err := runPhases(ctx, s, phases)
	return requeueOnConflict(r.finishPass(ctx, s, res, err))
}

// phase is one step of a pass; a pass stops at the first that fails, ends
// the pass (scope.done) or asks to come back later.
type phase func(context.Context, *scope) (ctrl.Result, error)

func runPhases(ctx context.Context, s *scope, phases []phase) (ctrl.Result, error) {
	for _, run := range phases {
		res, err := run(ctx, s)
		if err != nil || s.done || res.RequeueAfter > 0 {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// newPass starts a pass on d with what this process knows of it.
func (r *DelegationReconciler) newPass(d *v1alpha1.Delegation) *scope {
	key := client.ObjectKeyFromObject(d)
	s := newScope(d, r.now())
	if rv, ok := r.memory.handled.Load(key); !ok || rv != d.ResourceVersion {
		s.changed = true
	}
	return s
}

// finishPass ends a pass: status is written once (unless nothing worth a
// write happened), then what the pass's steps left for after the write runs
// and the task is handed on. When the pass or its write failed, the answers
// it took are put back for the next pass, which applies them again.
func (r *DelegationReconciler) finishPass(ctx context.Context, s *scope, res ctrl.Result, err error) (ctrl.Result, error) {
	deleting := !s.d.DeletionTimestamp.IsZero()
	if !s.skipStatus || err != nil {
		// A deleting object's generation moved with its deletion: it is
		// not written for that alone.
		if werr := r.writeStatus(ctx, s, err == nil && !deleting); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		for _, t := range s.taken {
			r.Calls.Restore(t.key, t.res)
		}
		return res, err
	}
	for _, after := range s.afterWrite {
		after(ctx)
	}
	r.handOn(s)
	return res, nil
}

// handOn remembers the version this pass ended on, drops the send record
// once the send's fate is known, and gives the task to the scheduler (or
// takes it away).
func (r *DelegationReconciler) handOn(s *scope) {
	key := client.ObjectKeyFromObject(s.d)
	r.memory.handled.Store(key, s.d.ResourceVersion)
	if s.d.Status.TaskID != "" || delegation.Settled(s.d.Status.Phase) {
		r.Calls.SendResolved(key)
	}
	r.schedule(s, &s.seen)
}

// requeueOnConflict: a conflict means a newer version exists; its event
// brings the Delegation back, and the requeue is a safety net.
func requeueOnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return res, err
}

// SetupWithManager indexes Delegations by parent and agent, so a parent's or
// an agent's change requeues the Delegations naming them.
func (r *DelegationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.Options = r.Options.withDefaults()
	if r.Calls == nil {
		r.Calls = agentio.NewDispatcher(0, 0)
		if err := mgr.Add(r.Calls); err != nil {
			return err
		}
	}
	if r.Calls.Connector == nil {
		r.Calls.Connector = r.Connector
	}
	if r.Scheduler == nil {
		r.Scheduler = agentio.NewScheduler(r.Calls, nil)
	}
	r.memory.calls, r.memory.scheduler = r.Calls, r.Scheduler
	r.Scheduler.Resume = r.runningTasks
	if err := mgr.Add(r.Scheduler); err != nil {
		return err
	}
	phaseMetrics.use(mgr.GetClient())
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexParent, func(o client.Object) []string {
		if p := o.(*v1alpha1.Delegation).Spec.ParentRef; p != nil {
			return []string{p.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexAgent, agentOf); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexSharedAgent, sharedAgentNamespace); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexQuotaContender, quotaContender); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexWaiting, func(o client.Object) []string {
		return waitingFor(o.(*v1alpha1.Delegation))
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.DelegationApproval{}, indexApprovalFor, approvalFor); err != nil {
		return err
	}
	// Quotas' use is written from the same cache and indexes.
	if err := (&quotaReconciler{Client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), now: r.now}).setup(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		// A status-only write of a Delegation does not wake it again.
		For(&v1alpha1.Delegation{}, builder.WithPredicates(notOwnStatusWrite())).
		Watches(&v1alpha1.Delegation{}, r.relatives()).
		// A finished call wakes its Delegation.
		WatchesRawSource(source.Channel(r.Calls.Events(), &handler.EnqueueRequestForObject{})).
		// A send's answer goes ahead of other work (see enqueueFirst).
		WatchesRawSource(source.Channel(r.Calls.UrgentEvents(), enqueueFirst())).
		// A quota place given back wakes the next in line.
		WatchesRawSource(r.quotaLineSource()).
		Watches(&v1alpha1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.usersOfAgent), builder.WithPredicates(agentChanged())).
		Watches(&v1alpha1.AgentGrant{}, handler.EnqueueRequestsFromMapFunc(r.usersOfGrant)).
		// Only a quota's limits move what waits: its status changes with
		// every task of the namespace.
		Watches(&v1alpha1.DelegationQuota{}, handler.EnqueueRequestsFromMapFunc(r.waitingForQuota),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.DelegationApproval{}, handler.EnqueueRequestsFromMapFunc(decidedDelegation)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Named("delegation")
	if r.Push != nil {
		r.Push.readNow, r.Push.answer = r.Scheduler.ReadNow, r.Scheduler.AnswerFromEvent
		if err := mgr.Add(r.Push); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(r.Push.events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// relatives enqueues a Delegation's parent when the parent's counts or group
// phase depend on the change, and its children when they act on it.
func (r *DelegationReconciler) relatives() handler.Funcs {
	enqueue := func(ctx context.Context, d *v1alpha1.Delegation, parent, children bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if parent && d.Spec.ParentRef != nil {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.ParentRef.Name}})
		}
		if children {
			for _, req := range r.byIndex(indexParent)(ctx, d) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object.(*v1alpha1.Delegation), true, true, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, cur := e.ObjectOld.(*v1alpha1.Delegation), e.ObjectNew.(*v1alpha1.Delegation)
			children := delegation.ParentChanged(old, cur)
			if children && budgetOnly(old, cur) {
				// Only children waiting for budget act on a ledger change:
				// N siblings must not cost N² reconciles.
				children = false
				r.enqueueWaiting(ctx, cur.Namespace, delegation.ReasonBudgetExhausted, cur.Name, q)
			}
			enqueue(ctx, cur, delegation.ChildChanged(old, cur), children, q)
			if agent, ok := cur.AgentKey(); ok && !delegation.Settled(old.Status.Phase) && delegation.Settled(cur.Status.Phase) {
				// A settled task frees a place at its Agent and in its namespace.
				r.enqueueWaitingForAgent(ctx, agent, q)
				r.enqueueQuotaTurn(ctx, cur.Namespace, q)
			}
			if !delegation.Settled(cur.Status.Phase) && old.DeletionTimestamp.IsZero() && !cur.DeletionTimestamp.IsZero() {
				// Being deleted, it holds no place under a quota any more.
				r.enqueueQuotaTurn(ctx, cur.Namespace, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d, ok := e.Object.(*v1alpha1.Delegation); ok {
				enqueue(ctx, d, true, true, q)
				if agent, ok := d.AgentKey(); ok {
					r.enqueueWaitingForAgent(ctx, agent, q)
				}
				// A deleted Delegation may have been ahead in the quota's
				// line; a deleted child frees a place under its parent's
				// childrenPerParent.
				r.enqueueWaiting(ctx, d.Namespace, delegation.ReasonQuotaExceeded, "", q)
				if d.Spec.ParentRef != nil {
					r.enqueueWaiting(ctx, d.Namespace, delegation.ReasonChildrenPerParentExceeded, d.Spec.ParentRef.Name, q)
				}
			}
		},
	}
}
