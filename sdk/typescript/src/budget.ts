// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { Message } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';

import { BUDGET_EXTENSION_URI } from './constants.js';
import { asObject, extensionData, type Metadata } from './meta.js';

/** Named amounts, e.g. { tokens: 20000 }. */
export type Meters = Record<string, number>;

/**
 * Thrown by Budget.charge when a charge would exceed the grant. An executor
 * that throws it (or returns after one was refused) ends the task Failed
 * with failure class BudgetExhausted.
 */
export class BudgetExhaustedError extends Error {
  override name = 'BudgetExhaustedError';
}

/** What a SendMessage grants under the budget extension. */
export interface BudgetRequest {
  /** Undefined means a deadline-only grant: metered spend is unlimited. */
  meters?: Meters;
  /** Milliseconds since the epoch; undefined for none. */
  deadline?: number;
}

/** The report every status update carries under the budget extension URI. */
export interface BudgetReport {
  left?: Meters;
  spent?: Meters;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Reads the budget a message grants; undefined when none. Malformed data is
 * an InvalidParams error (-32602).
 */
export function budgetRequest(message: Message | undefined, requestMeta: Metadata): BudgetRequest | undefined {
  const { found, value } = extensionData(message, requestMeta, BUDGET_EXTENSION_URI);
  if (!found) return undefined;
  if (value === null) return {};
  const obj = asObject(value);
  if (!obj) throw new RequestMalformedError('budget extension metadata: not an object');
  const req: BudgetRequest = {};
  const meters = obj['meters'];
  if (meters !== undefined && meters !== null) {
    const m = asObject(meters);
    if (!m) throw new RequestMalformedError('budget extension metadata: meters is not an object');
    req.meters = {};
    for (const [name, n] of Object.entries(m)) {
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
        throw new RequestMalformedError(`budget extension metadata: meter ${JSON.stringify(name)} is not an integer`);
      }
      if (n < 0) throw new RequestMalformedError(`budget meter ${JSON.stringify(name)} is negative`);
      req.meters[name] = n;
    }
  }
  const deadline = obj['deadline'];
  if (deadline !== undefined && deadline !== null) {
    const t = typeof deadline === 'string' && RFC3339.test(deadline) ? Date.parse(deadline) : NaN;
    if (Number.isNaN(t)) throw new RequestMalformedError('budget extension metadata: deadline is not an RFC 3339 time');
    req.deadline = t;
  }
  return req;
}

/**
 * What a task may spend: named meters (e.g. tokens) and a deadline. A task
 * that was granted no meters gets an unlimited budget that still counts what
 * is spent.
 */
export class Budget {
  private readonly granted: Meters;
  private readonly spentMeters: Meters;
  /**
   * What was handed to child Delegations: their grant while they run, what
   * they were charged once they settle. It lowers left() but is not this
   * task's own spend: the operator accounts for it on the child.
   */
  private readonly held: Meters = {};
  private readonly holds = new Map<string, Meters>();
  /** A refused charge, so a task that then just stops fails with the right class. */
  private refused = false;

  constructor(
    readonly limited: boolean,
    granted: Meters = {},
    spent: Meters = {},
    /** Milliseconds since the epoch; undefined when never. */
    readonly deadline?: number,
  ) {
    this.granted = { ...granted };
    this.spentMeters = { ...spent };
  }

  /** The budget of a task granted nothing: unlimited, counting spend. */
  static unlimited(spent?: Meters): Budget {
    return new Budget(false, {}, spent);
  }

  /** The meters granted; undefined when unlimited. */
  grantedMeters(): Meters | undefined {
    return this.limited ? { ...this.granted } : undefined;
  }

  /** What the task itself charged so far. */
  spent(): Meters {
    return { ...this.spentMeters };
  }

  /**
   * What may still be charged per granted meter; undefined when unlimited.
   * A meter that was not granted has nothing left.
   */
  left(): Meters | undefined {
    if (!this.limited) return undefined;
    const left: Meters = {};
    for (const [m, g] of Object.entries(this.granted)) {
      left[m] = Math.max(0, g - (this.spentMeters[m] ?? 0) - (this.held[m] ?? 0));
    }
    return left;
  }

  /**
   * Records n units of meter as spent. Charge before spending: when the
   * charge would exceed what is left nothing is recorded and a
   * BudgetExhaustedError is thrown.
   */
  charge(meter: string, n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`charge of ${n} ${meter}: not a non-negative integer`);
    if (n === 0) return;
    if (this.limited) {
      const left = (this.granted[meter] ?? 0) - (this.spentMeters[meter] ?? 0) - (this.held[meter] ?? 0);
      if (n > left) {
        this.refused = true;
        throw new BudgetExhaustedError(`charge of ${n} ${meter} with ${Math.max(0, left)} left: budget exhausted`);
      }
    }
    this.spentMeters[meter] = (this.spentMeters[meter] ?? 0) + n;
  }

  /** Whether a charge was refused. */
  get exhausted(): boolean {
    return this.refused;
  }

  /** Holds a child's grant; idempotent per child, so a retried delegate() does not hold twice. */
  reserve(child: string, grant: Meters): void {
    if (!this.limited || this.holds.has(child)) return;
    const left = this.left() ?? {};
    for (const [m, n] of Object.entries(grant)) {
      if (n > (left[m] ?? 0)) {
        throw new BudgetExhaustedError(`granting ${n} ${m} to ${child} with ${left[m] ?? 0} left: budget exhausted`);
      }
    }
    for (const [m, n] of Object.entries(grant)) this.held[m] = (this.held[m] ?? 0) + n;
    this.holds.set(child, { ...grant });
  }

  /**
   * Replaces a child's reservation by what it was charged; with charge
   * undefined the whole reservation stays held (it ended without a report).
   */
  settle(child: string, charge: Meters | undefined): void {
    const grant = this.holds.get(child);
    if (!this.limited || !grant || charge === undefined) return;
    for (const [m, n] of Object.entries(grant)) {
      this.held[m] = (this.held[m] ?? 0) - (n - Math.min(n, Math.max(0, charge[m] ?? 0)));
    }
    this.holds.delete(child);
  }

  /** Drops a child's hold entirely (the child was never created). */
  release(child: string): void {
    const grant = this.holds.get(child);
    if (!this.limited || !grant) return;
    for (const [m, n] of Object.entries(grant)) this.held[m] = (this.held[m] ?? 0) - n;
    this.holds.delete(child);
  }

  /**
   * Whether there is anything to report: a grant (meters, or a deadline
   * alone: the client asked for a report either way) or some spend.
   */
  reports(): boolean {
    return this.limited || this.deadline !== undefined || Object.keys(this.spentMeters).length > 0;
  }

  /** The wire form carried by every status update; empty maps are left out. */
  report(): BudgetReport {
    const r: BudgetReport = {};
    if (Object.keys(this.spentMeters).length > 0) r.spent = this.spent();
    const left = this.left();
    if (left && Object.keys(left).length > 0) r.left = left;
    return r;
  }
}
