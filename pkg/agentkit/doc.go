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
// The agent's identity needs get on delegations and agents, and create on
// delegations, in the namespaces it works for. docs/security.md says why
// this check was chosen over signed tokens and what it leaves open.
package agentkit
