/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

// Quotas per namespace: before a Delegation's send, every DelegationQuota of
// its namespace is asked (delegation.QuotaGate decides). What is in flight is
// read from the cache through indexQuotaContender, never counted in memory;
// the only thing remembered is the Delegations this process let through whose
// send marker the cache may not show yet, so two passes at once cannot both
// take the last place.

import (
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/delegation"
)

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegationquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=delegationquotas/status,verbs=get;update;patch

// indexQuotaContender holds, for a Delegation that sends to an agent and has
// not settled nor is being deleted, the value "true": the namespace's tasks in
// flight and those waiting to be.
const (
	indexQuotaContender = "quota.contender"
	quotaContenderValue = "true"
)

func quotaContender(o client.Object) []string {
	d := o.(*v1alpha1.Delegation)
	if d.Spec.AgentRef == nil || delegation.Settled(d.Status.Phase) || !d.DeletionTimestamp.IsZero() {
		return nil
	}
	return []string{quotaContenderValue}
}

// inFlight: the Delegation's task was sent (or its send may have left) and
// it has not settled.
func inFlight(d *v1alpha1.Delegation) bool {
	return d.Status.TaskID != "" || d.Status.SendStarted != nil || sendMarker(d) != nil
}

// waitsForQuota: not sent, it waits in a line of the quotas, the
// namespace's or its siblings' (status.used counts it as waiting).
func waitsForQuota(d *v1alpha1.Delegation) bool {
	return waitsInLine(d, delegation.NamespaceLine) || waitsInLine(d, delegation.SiblingLine)
}

// waitsInLine: not sent, it waits in line (delegation.WaitsInLine).
func waitsInLine(d *v1alpha1.Delegation, line delegation.QuotaLine) bool {
	return !inFlight(d) && d.Status.Outcome != nil && delegation.WaitsInLine(line, d.Status.Outcome.Reason)
}

// quotaAdmission remembers, per namespace, the Delegations this process let
// through a quota until the cache shows them in flight or gone. Namespaces
// are locked apart: one namespace's checks never wait for another's.
type quotaAdmission struct {
	mu          sync.Mutex
	byNamespace map[string]*namespaceAdmission
}

type namespaceAdmission struct {
	mu       sync.Mutex
	admitted map[types.UID]bool
	// refused are the Delegations refused a place while a pass held one
	// (delegation.HeldByPass): a place given back wakes them by name.
	refused map[types.NamespacedName]bool
}

func (a *quotaAdmission) of(ns string) *namespaceAdmission {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byNamespace == nil {
		a.byNamespace = map[string]*namespaceAdmission{}
	}
	n := a.byNamespace[ns]
	if n == nil {
		n = &namespaceAdmission{admitted: map[types.UID]bool{}, refused: map[types.NamespacedName]bool{}}
		a.byNamespace[ns] = n
	}
	return n
}

// release forgets that this process let d through (see releaseUnsent); it
// reports whether it had, holding a place, and who was refused a place
// meanwhile.
func (a *quotaAdmission) release(d *v1alpha1.Delegation) (held bool, refused []types.NamespacedName) {
	a.mu.Lock()
	n := a.byNamespace[d.Namespace]
	a.mu.Unlock()
	if n == nil {
		return false, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if held = n.admitted[d.UID]; !held {
		return false, nil
	}
	delete(n.admitted, d.UID)
	for key := range n.refused {
		refused = append(refused, key)
	}
	clear(n.refused)
	return true, refused
}

// releaseUnsent forgets that this process let s.d through its quotas and
// its Agent's cap when the pass did not record a send: what it was let
// through for did not happen, and a place remembered for it would be held
// by nothing in flight until the process ends, its own next pass included.
// A quota place given back wakes the next in line (wakeQuotaLines): while
// this pass held it, a pass of that one may have been refused it, and
// nothing else wakes it before a task of the namespace settles (or a
// sibling is deleted).
func (r *DelegationReconciler) releaseUnsent(ctx context.Context, s *scope) {
	if s.d.Status.SendStarted != nil {
		return
	}
	if held, refused := r.memory.quota.release(s.d); held {
		r.wakeQuotaLines(ctx, s.d, refused)
	}
	r.memory.admission.release(s.d.UID)
}

// placeGivenBack is where a quota place was given back: the namespace's
// inFlight line and, for a child, its siblings' line; refused were refused
// a place while it was held.
type placeGivenBack struct {
	namespace, parent string
	refused           []types.NamespacedName
}

// wakeQuotaLines has the Delegations whose turn it may be in the lines
// d's place was in enqueued (through quotaLineSource), and those refused
// a place while it was held: the cache the turn is read from may not show
// them waiting yet.
func (r *DelegationReconciler) wakeQuotaLines(ctx context.Context, d *v1alpha1.Delegation, refused []types.NamespacedName) {
	if r.memory.quotaLine == nil {
		return
	}
	freed := placeGivenBack{namespace: d.Namespace, refused: refused}
	if d.Spec.ParentRef != nil {
		freed.parent = d.Spec.ParentRef.Name
	}
	select {
	case r.memory.quotaLine <- event.TypedGenericEvent[placeGivenBack]{Object: freed}:
	case <-ctx.Done():
	}
}

// quotaLineSource enqueues, for each place wakeQuotaLines names, the
// Delegations whose turn it may be: the first in the inFlight line, and
// the children of the parent its siblings hold.
func (r *DelegationReconciler) quotaLineSource() source.TypedSource[reconcile.Request] {
	r.memory.quotaLine = make(chan event.TypedGenericEvent[placeGivenBack], 256)
	return source.Channel(r.memory.quotaLine, handler.TypedFuncs[placeGivenBack, reconcile.Request]{
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[placeGivenBack], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueQuotaTurn(ctx, e.Object.namespace, q)
			for _, key := range e.Object.refused {
				q.Add(reconcile.Request{NamespacedName: key})
			}
			if e.Object.parent != "" {
				r.enqueueWaiting(ctx, e.Object.namespace, delegation.ReasonChildrenPerParentExceeded, e.Object.parent, q)
			}
		},
	})
}

// admitQuota keeps a Delegation Pending (reason QuotaExceeded,
// ChildrenPerParentExceeded or OverQuotaLimit, the record returned) while
// starting it would exceed a DelegationQuota of its namespace.
func (r *DelegationReconciler) admitQuota(ctx context.Context, s *scope) (*delegation.Record, error) {
	var quotas v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(s.d.Namespace), client.UnsafeDisableDeepCopy); err != nil || len(quotas.Items) == 0 {
		return nil, err
	}
	views := make([]delegation.Quota, 0, len(quotas.Items))
	var needDepth, needSiblings bool
	for i := range quotas.Items {
		h := quotas.Items[i].Spec.Hard
		views = append(views, delegation.Quota{Name: quotas.Items[i].Name, Hard: h})
		needDepth = needDepth || h.Depth != nil
		needSiblings = needSiblings || h.ChildrenPerParent != nil
	}
	a := r.memory.quota.of(s.d.Namespace)
	a.mu.Lock()
	defer a.mu.Unlock()
	ask := delegation.QuotaAsk{UID: string(s.d.UID)}
	if needDepth {
		ask.Depth = r.treeDepth(ctx, s.d)
	}
	if needSiblings && s.parentObj != nil {
		var children v1alpha1.DelegationList
		if err := r.List(ctx, &children, client.InNamespace(s.d.Namespace), client.MatchingFields{indexParent: s.parentObj.Name},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range children.Items {
			c := &children.Items[i]
			if owner := metav1.GetControllerOf(c); owner != nil && owner.UID != s.parentObj.UID {
				continue // a child of an earlier parent of the same name
			}
			ask.Siblings = append(ask.Siblings, a.contender(c, s.d.UID, c.Status.StartTime != nil, delegation.SiblingLine))
		}
	}
	var contenders v1alpha1.DelegationList
	if err := r.List(ctx, &contenders, client.InNamespace(s.d.Namespace), client.MatchingFields{indexQuotaContender: quotaContenderValue},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	live := map[types.UID]bool{}
	for i := range contenders.Items {
		live[contenders.Items[i].UID] = true
		ask.InFlight = append(ask.InFlight, a.contender(&contenders.Items[i], s.d.UID, false, delegation.NamespaceLine))
	}
	for uid := range a.admitted {
		if !live[uid] {
			delete(a.admitted, uid) // settled or gone before the cache showed it sent
		}
	}
	if len(a.admitted) == 0 {
		clear(a.refused) // no place is held by a pass: none will be given back
	}
	rec, ok := delegation.QuotaGate(views, ask)
	if !ok {
		if rec.Outcome.Reason != delegation.ReasonOverQuotaLimit && delegation.HeldByPass(ask.UID, ask.InFlight, ask.Siblings) {
			a.refused[client.ObjectKeyFromObject(s.d)] = true
		}
		return &rec, nil
	}
	delete(a.refused, client.ObjectKeyFromObject(s.d))
	a.admitted[s.d.UID] = true
	return nil, nil
}

// admitLimits keeps a Delegation Pending (reason OverQuotaLimit, the record
// returned) while it asks more than a DelegationQuota of its namespace allows
// any one Delegation: the admission policy's check, for what got past it (the
// policy off, or the quota lowered since).
func (r *DelegationReconciler) admitLimits(ctx context.Context, d *v1alpha1.Delegation) (*delegation.Record, error) {
	var quotas v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(d.Namespace), client.UnsafeDisableDeepCopy); err != nil || len(quotas.Items) == 0 {
		return nil, err
	}
	views := make([]delegation.Quota, 0, len(quotas.Items))
	for i := range quotas.Items {
		views = append(views, delegation.Quota{Name: quotas.Items[i].Name, Hard: quotas.Items[i].Spec.Hard})
	}
	var ask delegation.LimitsAsk
	if b := d.Spec.Budget; b != nil {
		ask.Meters = b.Meters
	}
	if p := d.Spec.Retry; p != nil {
		ask.Attempts = p.MaxAttempts
	}
	if rec, ok := delegation.QuotaLimitsGate(views, ask); !ok {
		return &rec, nil
	}
	return nil, nil
}

// contender is d as the quota gate sees it in line. Only the asker and those
// already waiting in that line queue; a Delegation waiting for something else
// (its parent, its Agent, its siblings in the inFlight line) holds no place
// and is not ahead. started: it holds its place even after it settled (a
// parent's started children).
func (a *namespaceAdmission) contender(d *v1alpha1.Delegation, asker types.UID, started bool, line delegation.QuotaLine) delegation.Contender {
	c := delegation.Contender{UID: string(d.UID), Name: d.Name, Created: d.CreationTimestamp.Time, Adopts: d.Spec.TaskID != ""}
	c.Started = started || inFlight(d)
	c.Done = !c.Started && (delegation.Settled(d.Status.Phase) || !d.DeletionTimestamp.IsZero())
	if c.Started || c.Done {
		delete(a.admitted, d.UID) // the cache shows it now
	} else {
		c.Admitted = a.admitted[d.UID]
		c.Done = !c.Admitted && d.UID != asker && !waitsInLine(d, line)
	}
	return c
}

// treeDepth is the Delegation's level below its root (a root is 0), as far
// as the cache knows its ancestors; checkChain reports cycles.
func (r *DelegationReconciler) treeDepth(ctx context.Context, d *v1alpha1.Delegation) int {
	depth, cur := 0, d
	for cur.Spec.ParentRef != nil && depth <= r.Options.MaxDepth {
		var next v1alpha1.Delegation
		if err := r.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: cur.Spec.ParentRef.Name}, &next); err != nil {
			return depth + 1
		}
		depth, cur = depth+1, &next
	}
	return depth
}

// enqueueQuotaTurn enqueues, when a task of the namespace settled, the
// Delegations waiting for a quota whose turn it may be
// (delegation.QuotaTurn), not every one waiting: each one woken costs a
// pass, and a status write when the count in its message moved, so with
// hundreds waiting every settled task held up the other namespaces' passes
// and the client's writes. Without an inFlight limit (or the quotas
// unread) every one waiting is woken.
func (r *DelegationReconciler) enqueueQuotaTurn(ctx context.Context, ns string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var quotas v1alpha1.DelegationQuotaList
	if err := r.List(ctx, &quotas, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		r.enqueueWaiting(ctx, ns, delegation.ReasonQuotaExceeded, "", q)
		return
	}
	views := make([]delegation.Quota, 0, len(quotas.Items))
	for i := range quotas.Items {
		views = append(views, delegation.Quota{Name: quotas.Items[i].Name, Hard: quotas.Items[i].Spec.Hard})
	}
	turn, limited := delegation.QuotaTurn(views)
	if !limited {
		r.enqueueWaiting(ctx, ns, delegation.ReasonQuotaExceeded, "", q)
		return
	}
	var waiting v1alpha1.DelegationList
	if err := r.List(ctx, &waiting, client.InNamespace(ns), client.MatchingFields{indexWaiting: waitingKey(delegation.ReasonQuotaExceeded, "")},
		client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	line := make([]delegation.Contender, 0, len(waiting.Items))
	for i := range waiting.Items {
		line = append(line, delegation.Contender{Name: waiting.Items[i].Name, Created: waiting.Items[i].CreationTimestamp.Time})
	}
	slices.SortFunc(line, delegation.InLine)
	for _, c := range line[:min(turn, len(line))] {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: c.Name}})
	}
}

// waitingForQuota names the Delegations of the object's namespace that wait
// for a quota or its approval: a quota changed, or a place may have freed.
func (r *DelegationReconciler) waitingForQuota(ctx context.Context, o client.Object) []reconcile.Request {
	reasons := []string{delegation.ReasonQuotaExceeded, delegation.ReasonChildrenPerParentExceeded,
		delegation.ReasonAwaitingApproval, delegation.ReasonOverQuotaLimit}
	out := make([]reconcile.Request, 0, len(reasons))
	for _, reason := range reasons {
		out = append(out, r.requestsFor(ctx, o.GetNamespace(), indexWaiting, waitingKey(reason, ""))...)
	}
	return out
}
