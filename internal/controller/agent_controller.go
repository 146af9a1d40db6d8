/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"cmp"
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents/finalizers,verbs=update
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile asks for the card, and once it is read chooses an interface and
// records it.
func (r *AgentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var agent v1alpha1.Agent
	if err := r.Get(ctx, req.NamespacedName, &agent); err != nil {
		if apierrors.IsNotFound(err) {
			r.Calls.TakeCard(req.NamespacedName)
			r.Calls.ForgetAgent(req.NamespacedName)
			agentio.ForgetAgentSeries(req.Namespace, req.Name) // its series go with it
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if done, res, err := r.reconcileFinalizer(ctx, &agent); done || err != nil {
		return res, err
	}
	before := agent.DeepCopy()
	refresh := 5 * time.Minute
	if agent.Spec.CardRefreshInterval != nil {
		refresh = agent.Spec.CardRefreshInterval.Duration
	}

	read, answered := r.Calls.TakeCard(req.NamespacedName)
	if answered && read.Card.Generation != agent.Generation {
		answered = false // read for an earlier spec: read again
	}
	if !answered {
		if wait, fresh := cardFresh(&agent, refresh, time.Now()); fresh {
			// A write of our own or a finalizer change is no reason to read the
			// card again: a card read is a call to the agent.
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		if !r.Calls.CardPending(req.NamespacedName) {
			r.Calls.ReadCard(&agent)
		}
		// The answer wakes the Agent; the call's own deadline bounds it.
		return ctrl.Result{}, nil
	}
	card, err := read.Card.Card, read.Err
	var trust delegation.CardTrust
	if err == nil {
		if trust = delegation.TrustCard(agent.Spec.CardSignature, card.Signature); !trust.Use {
			err = &cardRefused{msg: trust.Message}
		}
	}
	wasReady := meta.IsStatusConditionTrue(agent.Status.Conditions, "Ready")
	if err != nil {
		log.Info("agent card unavailable", "error", err.Error())
		reason := cardFailureReason(err)
		agent.Status.CardSignature = nil
		delegation.SetAgentReady(&agent, false, reason, truncate(err.Error(), 1024), time.Now())
		if wasReady {
			r.Recorder.Eventf(&agent, nil, "Warning", reason, "ReadCard", "%s", truncate(err.Error(), 1024))
		}
		refresh = min(refresh, 10*time.Second)
		if before.Status.ObservedGeneration != agent.Generation {
			// The endpoint was read for an earlier spec: never use it with this one.
			agent.Status.Endpoint = ""
		}
	} else {
		recordCard(&agent.Status, card)
		if read.Card.ListErr != nil {
			log.Info("cannot tell whether the agent lists tasks", "error", read.Card.ListErr.Error())
		}
		if listing := read.Card.Listing; listing != a2a.ListUnknown {
			can := listing == a2a.ListSupported
			agent.Status.CanListTasks = &can
		}
		agent.Status.CardSignature = trust.Signed
		message := "protocol " + card.ProtocolVersion + " over " + card.Binding
		if trust.Message != "" {
			message += "; " + trust.Message
		}
		delegation.SetAgentReady(&agent, true, ReasonCardRead, message, time.Now())
		if !wasReady {
			r.Recorder.Eventf(&agent, nil, "Normal", ReasonCardRead, "ReadCard",
				"agent %q ready: protocol %s over %s", card.Name, card.ProtocolVersion, card.Binding)
		}
	}
	agent.Status.ObservedGeneration = agent.Generation
	// The refresh time alone is not worth a write; it is refreshed with real changes.
	if !equality.Semantic.DeepEqual(withoutRefreshTime(before.Status), withoutRefreshTime(agent.Status)) {
		if err == nil {
			now := metav1.Now()
			agent.Status.LastRefreshTime = &now
		}
		if perr := r.Status().Patch(ctx, &agent, client.MergeFrom(before)); perr != nil && !apierrors.IsNotFound(perr) {
			return ctrl.Result{}, perr
		}
	}
	return ctrl.Result{RequeueAfter: refresh}, nil
}

// cardFresh reports whether the card recorded in status was read for this
// generation less than one refresh interval ago, and how long it stays so.
func cardFresh(agent *v1alpha1.Agent, refresh time.Duration, now time.Time) (time.Duration, bool) {
	st := agent.Status
	if st.LastRefreshTime == nil || st.ObservedGeneration != agent.Generation ||
		!meta.IsStatusConditionTrue(st.Conditions, "Ready") {
		return 0, false
	}
	left := refresh - now.Sub(st.LastRefreshTime.Time)
	return left, left > 0
}

// cardFailureReason is the Ready reason of a card that could not be used: an
// interface outside the Agent's origins is the owner's to fix, and says so.
func cardFailureReason(err error) string {
	switch {
	case errors.Is(err, a2a.ErrOriginNotAllowed):
		return ReasonOriginNotAllowed
	case errors.Is(err, ErrSecretNotMarked):
		return ReasonSecretNotMarked
	case errors.As(err, new(*cardRefused)):
		return ReasonCardSignatureInvalid
	case errors.Is(err, agentio.ErrCardKeys):
		return ReasonCardKeysUnavailable
	}
	return ReasonCardUnavailable
}

// cardRefused is a card that was read but whose signature does not allow
// its use (delegation.TrustCard says why).
type cardRefused struct{ msg string }

func (e *cardRefused) Error() string { return e.msg }

func recordCard(st *v1alpha1.AgentStatus, card *a2a.Card) {
	st.CardName = card.Name
	st.ProtocolVersion = card.ProtocolVersion
	st.Binding = card.Binding
	st.Endpoint = card.URL
	st.Tenant = card.Tenant
	st.Streaming = card.Streaming
	st.PushNotifications = card.PushNotifications
	st.Extensions = v1alpha1.AgentExtensions{Lease: card.Lease, Budget: card.Budget}
	st.Skills = nil
	for i, s := range card.Skills {
		if i == 64 {
			break
		}
		st.Skills = append(st.Skills, v1alpha1.AgentSkill{ID: s.ID, Name: s.Name})
	}
}

func withoutRefreshTime(st v1alpha1.AgentStatus) v1alpha1.AgentStatus {
	st.LastRefreshTime = nil
	return st
}

// SetupWithManager sets up the controller with the Manager.
func (r *AgentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Calls == nil {
		r.Calls = agentio.NewDispatcher(0, r.MaxCallTimeout)
	}
	if r.Calls.Connector == nil {
		r.Calls.Connector = r.Connector
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Agent{}).
		// A finished card read wakes its Agent.
		WatchesRawSource(source.Channel(r.Calls.AgentEvents(), &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Watches(&v1alpha1.Delegation{}, handler.EnqueueRequestsFromMapFunc(r.deletingAgentOf)).
		Named("agent").
		Complete(r)
}
