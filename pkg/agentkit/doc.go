/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package agentkit helps agent authors serve A2A agents (a2a-go v2) that
// honour tether's lease and budget extensions, and delegate work by creating
// child Delegations.
//
// Serve an agent, naming the origins under which the operator reaches it:
//
//	srv := agentkit.NewServer(card, myExecutor,
//		agentkit.WithOrigins("http://orchestrator.agents:8080"))
//	defer srv.Close()
//	http.ListenAndServe(":8080", srv)
//
// Inside the executor, agentkit.BudgetFrom(ctx) is the task's budget (charge
// it before spending), the context ends at the budget deadline or when the
// task is cancelled (by a client, or because its lease lapsed), and
// agentkit.Delegate creates and waits for a child Delegation. The wire
// format is specified in docs/extensions.md.
//
// # The claim check
//
// The operator names the Delegation that sent a message under the metadata
// key https://tether.dev/a2a/delegation ("namespace/name"). Every agent a
// Delegation is sent to sees that claim, so Delegate honours it only for the
// agent the Delegation was sent to and only while the Delegation runs. For
// a message of task T (first message id F: the first message of T's
// history, or the message itself when it starts T) the claim ns/name is
// proven when, in this order:
//
//  1. the message being executed (or its request) carries the claim; no
//     earlier message of the task is consulted;
//  2. Delegation ns/name exists, is not being deleted, has neither
//     spec.cancel nor spec.detach, and its status.phase is not Succeeded,
//     Failed, Canceled or Detached;
//  3. its status.taskID equals T's id, or, while status.taskID is still
//     empty, F equals "tether-" + its metadata.uid;
//  4. the origin of status.endpoint of the Agent spec.agentRef names (in
//     spec.agentRef.namespace when set, else in ns) is one
//     of the agent's own origins (scheme://host:port, lower case, the
//     default port written out; http and https only).
//
// The own origins come from WithOrigins, or else from the card's
// supportedInterfaces; an agent that knows none proves no claim. An
// unproven claim is ErrClaimNotProven (wrapped with the step that failed)
// and creates nothing. When steps 1 and 4 held (the Delegation was sent to
// this agent) the refusal is also recorded as a Warning Event on it, if the
// Kit has an event recorder (WithEventRecorder); a claim on a Delegation
// sent elsewhere writes nothing into its namespace.
//
// # Workload identity
//
// With WithTokenReview the Server authenticates every protocol request:
// its bearer token must pass the Kubernetes TokenReview API for the
// agent's audience (the operator sends its ServiceAccount's token to
// Agents with spec.auth.serviceAccountToken), else the request is refused
// with HTTP 401. CallerFrom(ctx) is the caller; each caller's tasks are its
// own. WithOperator then proves claims only from the operator:
//
//	reviews := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().TokenReviews()
//	srv := agentkit.NewServer(card, myExecutor,
//		agentkit.WithOrigins("http://orchestrator.agents:8080"),
//		agentkit.WithTokenReview(reviews, "orchestrator.agents"),
//		agentkit.WithOperator(agentkit.ServiceAccountUsername("tether-system", "tether")))
//
// The agent's identity needs get on delegations and agents, and create on
// delegations, in the namespaces it works for; with WithTokenReview also
// create on tokenreviews (system:auth-delegator). docs/security.md says why
// this check was chosen over signed tokens and what it leaves open.
//
// # Signed cards
//
// WithCardSigningKey signs the served card (A2A 1.0 §8.4) with a private
// JSON Web Key that names its kid and alg, usually a key Secret mounted as
// a file and read with LoadCardSigningKey; PublicKeySet is the key set an
// Agent's spec.cardSignature names. The signature is the one the TypeScript
// agentkit (serve's cardSigningKey) writes for the same card and key, byte
// for byte: a JWS with a detached payload, protected header {alg, kid, typ:
// "JOSE"}, over the RFC 8785 form of the card without its signatures and
// empty values. docs/security.md describes the check.
package agentkit
