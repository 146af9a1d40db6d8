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
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tether-dev/tether/api/v1alpha1"
	"github.com/tether-dev/tether/internal/a2a"
	"github.com/tether-dev/tether/internal/agentio"
	"github.com/tether-dev/tether/internal/delegation"
)

// Agent condition reasons.
const (
	ReasonCardRead        = "CardRead"
	ReasonCardUnavailable = "CardUnavailable"
	// ReasonOriginNotAllowed: the card's interface is outside the Agent's
	// url, cardURL and allowedOrigins.
	ReasonOriginNotAllowed = a2a.ReasonOriginNotAllowed
	// ReasonSecretNotMarked: a Secret the Agent names lacks the
	// AgentCredentialsLabel its namespace's owner sets to consent.
	ReasonSecretNotMarked = "SecretNotMarked"
)

// AgentReconciler reads each Agent's card into its status.
type AgentReconciler struct {
	client.Client
	Connector *AgentConnector
	Recorder  events.EventRecorder
	// MaxConcurrentReconciles is the number of workers (default 4): card
	// reads of different Agents run side by side.
	MaxConcurrentReconciles int
	// MaxCallTimeout caps a card read, whatever the Agent's requestTimeout.
	MaxCallTimeout time.Duration
}

// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents/finalizers,verbs=update
// +kubebuilder:rbac:groups=delegation.tether.dev,resources=agents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile resolves the card, chooses an interface and records it.
func (r *AgentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var agent v1alpha1.Agent
	if err := r.Get(ctx, req.NamespacedName, &agent); err != nil {
		if apierrors.IsNotFound(err) {
			agentio.ForgetAgent(req.Namespace, req.Name) // its series go with it
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

	if wait, fresh := cardFresh(&agent, refresh, time.Now()); fresh {
		// A write of our own or a finalizer change is no reason to read the
		// card again: a card read is a call to the agent.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	card, err := r.resolve(ctx, &agent)
	wasReady := meta.IsStatusConditionTrue(agent.Status.Conditions, "Ready")
	if err != nil {
		log.Info("agent card unavailable", "error", err.Error())
		reason := cardFailureReason(err)
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
		if can, known := r.canListTasks(ctx, &agent, card); known {
			agent.Status.CanListTasks = &can
		}
		delegation.SetAgentReady(&agent, true, ReasonCardRead, "protocol "+card.ProtocolVersion+" over "+card.Binding, time.Now())
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

// resolve reads the card under its own deadline, so a hung card server
// holds one worker for at most that long and delays only its own Agent
// (controller-runtime never reconciles one Agent on two workers at once, so
// a card read needs no pool of its own).
func (r *AgentReconciler) resolve(ctx context.Context, agent *v1alpha1.Agent) (*a2a.Card, error) {
	var asked time.Duration
	if t := agent.Spec.RequestTimeout; t != nil {
		asked = t.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, agentio.CallTimeout(asked, r.MaxCallTimeout))
	defer cancel()
	ep, err := r.Connector.Endpoint(ctx, agent, "")
	if err != nil {
		return nil, err
	}
	return a2a.ResolveCard(ctx, ep)
}

// probeTimeout bounds the ListTasks capability probe at card read.
const probeTimeout = 5 * time.Second

// canListTasks probes whether the agent lists tasks for this caller; known
// is false when the probe got no usable answer (the last answer stands).
func (r *AgentReconciler) canListTasks(ctx context.Context, agent *v1alpha1.Agent, card *a2a.Card) (can, known bool) {
	ep, err := r.Connector.Endpoint(ctx, agent, "")
	if err != nil {
		return false, false
	}
	c, err := a2a.NewClient(ctx, ep, card)
	if err != nil {
		return false, false
	}
	defer c.Close()
	// The probe must not hold the card's status back: an agent that takes
	// calls and never answers would keep the Agent from Ready for its whole
	// requestTimeout. Without an answer the last value stands.
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	listing, err := a2a.ProbeListing(pctx, c)
	if err != nil {
		logf.FromContext(ctx).Info("cannot tell whether the agent lists tasks", "error", err.Error())
	}
	return listing == a2a.ListSupported, listing != a2a.ListUnknown
}

// cardFailureReason is the Ready reason of a card that could not be used: an
// interface outside the Agent's origins is the owner's to fix, and says so.
func cardFailureReason(err error) string {
	switch {
	case errors.Is(err, a2a.ErrOriginNotAllowed):
		return ReasonOriginNotAllowed
	case errors.Is(err, ErrSecretNotMarked):
		return ReasonSecretNotMarked
	}
	return ReasonCardUnavailable
}

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
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Agent{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.MaxConcurrentReconciles, 4)}).
		Watches(&v1alpha1.Delegation{}, handler.EnqueueRequestsFromMapFunc(r.deletingAgentOf)).
		Named("agent").
		Complete(r)
}
