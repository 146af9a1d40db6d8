// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import { AsyncLocalStorage } from 'node:async_hooks';

import type { Budget } from './budget.js';
import type { Caller } from './caller.js';

/**
 * What a task says about the Delegation that sent it, with the ids that can
 * prove it: the operator derives a task's first message id from the
 * Delegation's UID, and records the task id in the Delegation's status.
 * The name alone is a claim; delegate() verifies it before it creates
 * anything.
 */
export interface DelegationClaim {
  namespace: string;
  name: string;
  /** The id of the task's first message. */
  messageId: string;
  taskId: string;
  /** The authenticated user who sent the message; undefined when none. */
  caller?: string;
}

/** What the kit gives an executor for one task. */
export interface TaskScope {
  taskId: string;
  contextId: string;
  /** The task's budget: charge it before spending. */
  budget: Budget;
  /** Who sent the message, when the kit authenticated them (tokenReview). */
  caller?: Caller;
  /** The operator's identity: claims are proven only from it (the kit's operator option). */
  operator?: string;
  /** The Delegation the task came from, as its message claims; undefined when none. */
  delegation?: DelegationClaim;
  /**
   * The agent's own origins (scheme://host:port): delegate() proves a claim
   * only for a Delegation whose Agent's endpoint is at one of them.
   */
  origins: readonly string[];
  /**
   * Whether delegate() records a Warning Event on a Delegation sent to this
   * agent when a claim on it is refused, or a child name it needs is taken
   * (the kit's recordEvents option).
   */
  recordEvents?: boolean;
  /**
   * Aborted when the task is cancelled (by a client, or because its lease
   * lapsed) or its budget deadline passes. Stop working when it fires.
   */
  signal: AbortSignal;
}

const current = new AsyncLocalStorage<TaskScope>();

/**
 * The scope of the task the calling code works for, when it runs inside an
 * executor wrapped by the kit (across awaits); undefined elsewhere.
 */
export function currentTask(): TaskScope | undefined {
  return current.getStore();
}

export function runInScope<T>(scope: TaskScope, fn: () => T): T {
  return current.run(scope, fn);
}
