/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
	"github.com/tether-dev/tether/internal/tracing"
)

// Field indexes that let a change to one object requeue the objects naming it.
const (
	indexParent = "spec.parentRef.name"
	indexAgent  = "spec.agentRef.name"
	// indexWaiting holds only Delegations waiting in Pending for room
	// (see waitingFor).
	indexWaiting = "status.waitingFor"
)

// Options are the operator's tunables for Delegations.
type Options struct {
	// CancelTimeout bounds how long CancelTask is retried before a finalizer
	// lets go (the lease bounds the orphan).
	CancelTimeout time.Duration
	// SendTimeout bounds how long a send may go without a task id before the
	// Delegation fails as Unreachable.
	SendTimeout time.Duration
	// MaxDepth bounds parentRef chains.
	MaxDepth int
	// ResultTextLimit bounds status.result.text (bytes).
	ResultTextLimit int
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// MinHandOverTTL, when set, is the shortest lease.ttl that survives a
	// leader hand-over; a Delegation asking for less is warned.
	MinHandOverTTL time.Duration
}

func (o Options) withDefaults() Options {
	if o.CancelTimeout == 0 {
		o.CancelTimeout = 2 * time.Minute
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = 2 * time.Minute
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = 16
	}
	if o.ResultTextLimit == 0 {
		o.ResultTextLimit = 16 << 10
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = 4
	}
	return o
}

// DelegationReconciler sends each Delegation's task and follows it.
type DelegationReconciler struct {
	client.Client
	// APIReader reads around the cache: a send is only made from a fresh read.
	APIReader client.Reader
	Connector *agentio.Connector
	// Calls runs every A2A call on the Agent's pool; nil builds one with
	// the defaults.
	Calls *agentio.Dispatcher
	// Scheduler renews and polls running tasks; nil builds one.
	Scheduler *agentio.Scheduler
	Recorder  events.EventRecorder
	Options   Options
	// sentTerms holds, per Delegation, the terms of a send on its way.
	sentTerms sync.Map
	// Push, when set, is registered with agents that push notifications.
	Push *PushReceiver
	// Clock is the clock; tests may replace it.
	Clock clock.PassiveClock

	admission admission
	cascaded  cascaded
	// handled is the resourceVersion each Delegation had when this process
	// last finished a pass on it.
	handled sync.Map
	// afterCharge, when set, runs after a child charged its parent and
	// before its own status is written: tests stop the operator there.
	afterCharge func(ctx context.Context)
	// beforeReplySend, when set, runs after a reply was claimed in status
	// and before it is sent: tests stop the operator there.
	beforeReplySend func(ctx context.Context)
}

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegations/finalizers,verbs=update

// Reconcile reads the Delegation, asks internal/delegation what to do, does it
// and writes status once.
func (r *DelegationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	d := &v1alpha1.Delegation{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		if apierrors.IsNotFound(err) {
			r.Scheduler.Untrack(req.NamespacedName)
			r.Calls.Forget(req.NamespacedName)
			r.handled.Delete(req.NamespacedName)
			r.cascaded.forget(req.NamespacedName)
			r.sentTerms.Delete(req.NamespacedName)
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
	defer func() {
		// A conflict means a newer version exists; its event brings us back.
		if apierrors.IsConflict(retErr) {
			res, retErr = ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}()
	// A group holds a budget for its children from the start: it takes
	// the finalizer first. A task takes it with its send marker (one write).
	if base := d.DeepCopy(); !deleting && delegation.IsGroup(&d.Spec) && controllerutil.AddFinalizer(d, v1alpha1.Finalizer) {
		// A patch of the finalizer alone: an Update would write spec back as
		// Go serialises it and take it from its GitOps owner. The next pass
		// comes from the update event.
		return ctrl.Result{}, r.Patch(ctx, d, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	}

	s := newScope(d, r.now())
	if rec, ok := r.Calls.SendRecord(req.NamespacedName); ok {
		s.sendLeft = rec.FirstLeft
	}
	if rv, ok := r.handled.Load(req.NamespacedName); !ok || rv != d.ResourceVersion {
		s.changed = true
	}
	defer func() {
		wasSettled := delegation.Settled(s.base.Status.Phase)
		if !s.skipStatus || retErr != nil {
			// A deleting object's generation moved with its deletion: it
			// is not written for that alone.
			if err := r.writeStatus(ctx, s, retErr == nil && !deleting); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}
		if retErr != nil {
			// What this pass took is not written: the next pass applies it.
			for _, t := range s.taken {
				r.Calls.Restore(t.key, t.res)
			}
			return
		}
		if delegation.Settled(s.d.Status.Phase) {
			r.cascaded.reason(req.NamespacedName, true)
		}
		if s.appliedTerms != nil {
			r.sentTerms.CompareAndDelete(req.NamespacedName, s.appliedTerms)
		}
		r.handled.Store(req.NamespacedName, s.d.ResourceVersion)
		if s.d.Status.TaskID != "" || delegation.Settled(s.d.Status.Phase) {
			r.Calls.SendResolved(req.NamespacedName)
		}
		r.schedule(s, &s.seen)
		if !wasSettled && delegation.Settled(s.d.Status.Phase) {
			// A parent that ended cancels its children's tasks at once.
			r.cascadeCancel(ctx, s.d, delegation.ReasonParentEnded)
		}
	}()
	phases := []func(context.Context, *scope) (ctrl.Result, error){
		r.reconcileParent,
		r.reconcileAgent,
		r.reconcileChildren,
		r.reconcileTask,
	}
	if deleting {
		phases = []func(context.Context, *scope) (ctrl.Result, error){
			r.reconcileParent,
			r.reconcileAgent,
			r.cancelOnDelete,
			r.releaseFinalizer,
		}
	}
	for _, phase := range phases {
		res, err := phase(ctx, s)
		if err != nil || s.done {
			return res, err
		}
		if res.RequeueAfter > 0 {
			return res, nil
		}
	}
	return ctrl.Result{}, nil
}

func (r *DelegationReconciler) clock() clock.PassiveClock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

func (r *DelegationReconciler) now() time.Time { return r.clock().Now() }

// writeStatus derives the conditions and patches status when something a
// user can see changed; observedGeneration only moves after a clean pass.
func (r *DelegationReconciler) writeStatus(ctx context.Context, s *scope, clean bool) error {
	d := s.d
	if clean {
		d.Status.ObservedGeneration = d.Generation
	}
	delegation.SetConditions(d, s.now)
	r.warnShortLease(s)
	if equality.Semantic.DeepEqual(s.base.Status, d.Status) {
		return nil
	}
	// The lock makes a pass that read a stale copy fail instead of acting on
	// it: a reply is only made after its claim was written this way.
	if err := r.Status().Patch(ctx, d, client.MergeFromWithOptions(s.raw, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	r.recordTransition(s.base, d)
	if !s.base.Status.Phase.Settled() && d.Status.Phase.Settled() {
		tracing.RecordSettled(ctx, r.Client, d)
	}
	s.base = d.DeepCopy()
	s.raw = d.DeepCopy()
	return nil
}

// persistStatus writes status now (before a send) instead of at the end.
func (r *DelegationReconciler) persistStatus(ctx context.Context, s *scope) error {
	return r.writeStatus(ctx, s, false)
}

// recordTransition emits one Event per phase change.
func (r *DelegationReconciler) recordTransition(before, after *v1alpha1.Delegation) {
	if before.Status.Phase == after.Status.Phase || after.Status.Phase == "" {
		return
	}
	reason, note, kind := string(after.Status.Phase), "", "Normal"
	if o := after.Status.Outcome; o != nil {
		note = o.Message
		if o.Reason != "" {
			reason = o.Reason
		}
	}
	if after.Status.Phase == v1alpha1.PhaseFailed || after.Status.Phase == v1alpha1.PhaseCanceled {
		kind = "Warning"
	}
	// The API server refuses Event notes over 1024 bytes.
	r.Recorder.Eventf(after, nil, kind, reason, string(after.Status.Phase), "%s", truncate(string(after.Status.Phase)+": "+note, 1024))
}

// SetupWithManager indexes Delegations by parent and agent, so a parent's or
// an agent's change requeues the Delegations naming them.
func (r *DelegationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.Options = r.Options.withDefaults()
	if r.Calls == nil {
		r.Calls = agentio.NewDispatcher(0, 0)
	}
	if r.Calls.Connector == nil {
		r.Calls.Connector = r.Connector
	}
	if r.Scheduler == nil {
		r.Scheduler = agentio.NewScheduler(r.Calls, nil)
	}
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
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexAgent, func(o client.Object) []string {
		if a := o.(*v1alpha1.Delegation).Spec.AgentRef; a != nil {
			return []string{a.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.Delegation{}, indexWaiting, func(o client.Object) []string {
		return waitingFor(o.(*v1alpha1.Delegation))
	}); err != nil {
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
		Watches(&v1alpha1.Agent{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(indexAgent)), builder.WithPredicates(agentChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles}).
		Named("delegation")
	if r.Push != nil {
		r.Push.readNow = r.Scheduler.ReadNow
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
			if cur.Spec.AgentRef != nil && !delegation.Settled(old.Status.Phase) && delegation.Settled(cur.Status.Phase) {
				// A settled task frees a place at its Agent.
				r.enqueueWaiting(ctx, cur.Namespace, delegation.ReasonAgentAtCapacity, cur.Spec.AgentRef.Name, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if d, ok := e.Object.(*v1alpha1.Delegation); ok {
				enqueue(ctx, d, true, true, q)
				if d.Spec.AgentRef != nil {
					r.enqueueWaiting(ctx, d.Namespace, delegation.ReasonAgentAtCapacity, d.Spec.AgentRef.Name, q)
				}
			}
		},
	}
}

func (r *DelegationReconciler) byIndex(field string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.requestsFor(ctx, o.GetNamespace(), field, o.GetName())
	}
}

// requestsFor names the cached Delegations of a namespace whose index field
// holds value; only their keys are read, so nothing is copied.
func (r *DelegationReconciler) requestsFor(ctx context.Context, ns, field, value string) []reconcile.Request {
	var list v1alpha1.DelegationList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
