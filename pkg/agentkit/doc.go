/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package agentkit helps agent authors serve A2A agents (a2a-go v2) that
// honour tether's lease and budget extensions, and delegate work by creating
// child Delegations.
//
// Serve an agent:
//
//	srv := agentkit.NewServer(card, myExecutor)
//	defer srv.Close()
//	http.ListenAndServe(":8080", srv)
//
// Inside the executor, agentkit.BudgetFrom(ctx) is the task's budget (charge
// it before spending), the context ends at the budget deadline or when the
// task is cancelled (by a client, or because its lease lapsed), and
// agentkit.Delegate creates and waits for a child Delegation. The wire
// format is specified in docs/extensions.md.
package agentkit
