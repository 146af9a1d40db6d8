// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// The wire names of tether's A2A extensions (docs/extensions.md). They are
// the same strings the operator and the Go agentkit use.

/** The lease extension: a task lives while the client renews it. */
export const LEASE_EXTENSION_URI = 'https://tether.dev/a2a/ext/lease/v1';

/** The budget extension: meters and a deadline granted, spend reported. */
export const BUDGET_EXTENSION_URI = 'https://tether.dev/a2a/ext/budget/v1';

/**
 * Message metadata key carrying "namespace/name" of the Delegation that sent
 * a task, so the agent can create child Delegations of it.
 */
export const DELEGATION_METADATA_KEY = 'https://tether.dev/a2a/delegation';

/** Status message metadata key of a failed task's failure class. */
export const FAILURE_CLASS_METADATA_KEY = 'failureClass';

/** The shortest lease every agent accepts, in milliseconds. */
export const MIN_LEASE_TTL_MS = 1000;

/** The longest lease an agent grants unless configured otherwise (1h). */
export const DEFAULT_MAX_LEASE_TTL_MS = 60 * 60 * 1000;

/** Failure classes the operator understands (v1alpha1.FailureClass). */
export type FailureClass = 'InvalidRequest' | 'Transient' | 'PolicyRefusal' | 'BudgetExhausted' | 'Internal';
