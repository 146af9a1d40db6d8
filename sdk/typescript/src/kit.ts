// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { AgentExtension } from '@a2a-js/sdk';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ServerCallContext, type A2ARequestHandler, type RequestContext, type User } from '@a2a-js/sdk/server';

import { Budget, budgetRequest } from './budget.js';
import { BUDGET_EXTENSION_URI, DEFAULT_MAX_LEASE_TTL_MS, LEASE_EXTENSION_URI } from './constants.js';
import { KitExecutor, type KitAgentExecutor } from './executor.js';
import { KitRequestHandler } from './handler.js';
import { leaseRequest, MemoryLeaseStore, type Lease, type LeaseStore } from './lease.js';
import { asObject } from './meta.js';
import { originsOf } from './claim.js';
import type { TokenReviewer } from './caller.js';

/** Where the kit writes what it does; console by default. */
export interface Logger {
  info(line: string): void;
  warn(line: string): void;
}

export interface KitOptions {
  /** The longest lease the agent grants, in milliseconds (default 1h). */
  maxLeaseTtlMs?: number;
  /** Shares leases, e.g. between replicas (default: in memory). */
  leaseStore?: LeaseStore;
  /** How often lapsed leases are looked for, in milliseconds (default 1000). */
  sweepIntervalMs?: number;
  /**
   * The origins (scheme://host[:port]) under which the operator reaches this
   * agent: every URL Agents use for it. A claim is proven only for a
   * Delegation whose Agent's endpoint is at one of them. serve() defaults to
   * the origin of the card's URL; a URL that is not http(s) is ignored.
   */
  origins?: string[];
  /**
   * Record a Warning Event (events.k8s.io) on a Delegation sent to this agent
   * when delegate() refuses a claim on it (reason ClaimNotProven) or a child
   * name it needs is taken (ChildNameTaken). The agent's identity then needs
   * create on events.k8s.io events. Default false.
   */
  recordEvents?: boolean;
  /**
   * Authenticate every protocol request with the Kubernetes TokenReview API
   * (serve() refuses others with HTTP 401; the card stays public): its
   * bearer token must be valid for audience. reviewer defaults to one on
   * KubeConfig.loadFromDefault(); the agent's identity needs create on
   * tokenreviews (system:auth-delegator). The caller is scope.caller.
   */
  tokenReview?: { audience: string; reviewer?: TokenReviewer };
  /**
   * The operator's identity (its ServiceAccount's user name, see
   * serviceAccountUsername): delegate() then proves a claim only for a
   * message the operator sent. Use with tokenReview, else no caller is
   * authenticated and no claim is proven.
   */
  operator?: string;
  /** The clock, in milliseconds since the epoch (tests move it). */
  now?: () => number;
  logger?: Logger;
}

const consoleLogger: Logger = {
  info: (line) => console.log(`${new Date().toISOString()} ${line}`),
  warn: (line) => console.warn(`${new Date().toISOString()} ${line}`),
};

/**
 * Implements the lease and budget extensions for an @a2a-js/sdk server.
 * Use serve(), or wire the parts into your own: executor() wraps the agent,
 * requestHandler() wraps the SDK's DefaultRequestHandler, extensions() go
 * into the card, and sweep() runs next to the handler.
 */
export class Kit {
  readonly maxLeaseTtlMs: number;
  readonly leases: LeaseStore;
  readonly sweepIntervalMs: number;
  readonly now: () => number;
  readonly logger: Logger;
  /** The agent's own origins, normalised as the claim check compares them. */
  origins: string[];
  readonly recordEvents: boolean;
  readonly operator: string | undefined;

  private readonly budgets = new Map<string, Budget>();
  private readonly contexts = new Map<string, string>();

  constructor(opts: KitOptions = {}) {
    this.maxLeaseTtlMs = opts.maxLeaseTtlMs ?? DEFAULT_MAX_LEASE_TTL_MS;
    this.leases = opts.leaseStore ?? new MemoryLeaseStore();
    this.sweepIntervalMs = opts.sweepIntervalMs && opts.sweepIntervalMs > 0 ? opts.sweepIntervalMs : 1000;
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger ?? consoleLogger;
    this.origins = originsOf(opts.origins ?? []);
    this.recordEvents = opts.recordEvents ?? false;
    this.operator = opts.operator || undefined;
  }

  /**
   * Wraps an agent's executor: it grants leases, gives the task its budget
   * and Delegation, stops the task at the budget deadline, and reports the
   * budget on every status update.
   */
  executor(inner: KitAgentExecutor): KitExecutor {
    return new KitExecutor(this, inner);
  }

  /**
   * Wraps the SDK's request handler: it refuses bad extension metadata
   * before anything starts, renews leases on GetTask calls that activate
   * the lease extension, and stamps the current lease expiry on every task
   * it returns.
   */
  requestHandler(inner: A2ARequestHandler): KitRequestHandler {
    return new KitRequestHandler(this, inner);
  }

  /** The card entries declaring both extensions. */
  extensions(): AgentExtension[] {
    return [
      {
        uri: LEASE_EXTENSION_URI,
        description: 'Tasks live while the client renews a lease (GetTask with the extension activated).',
        required: false,
        params: { maxTTLSeconds: this.maxLeaseTtlMs / 1000 },
      },
      {
        uri: BUDGET_EXTENSION_URI,
        description: 'Tasks honour a granted budget and deadline and report what is left and spent.',
        required: false,
        params: undefined,
      },
    ];
  }

  /**
   * Cancels the tasks whose lease lapsed through handler (so cancellation
   * runs the same path as a client's CancelTask), every sweepIntervalMs,
   * until the returned function is called.
   */
  sweep(handler: A2ARequestHandler): () => void {
    const inFlight = new Set<string>();
    const tick = async (): Promise<void> => {
      let lapsed: Lease[];
      try {
        lapsed = await this.leases.expired(this.now());
      } catch (err) {
        this.logger.warn(`listing lapsed leases failed: ${String(err)}`);
        return;
      }
      for (const l of lapsed) {
        if (inFlight.has(l.taskId)) continue;
        inFlight.add(l.taskId);
        void this.cancelLapsed(handler, l).finally(() => inFlight.delete(l.taskId));
      }
    };
    const timer = setInterval(() => void tick(), this.sweepIntervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  private async cancelLapsed(handler: A2ARequestHandler, l: Lease): Promise<void> {
    this.logger.info(`task ${l.taskId} lease lapsed at ${new Date(l.expiresAt).toISOString()}, cancelling`);
    const user: User = { isAuthenticated: l.user !== undefined, userName: l.user ?? '' };
    const context = new ServerCallContext({ user, ...(l.tenant ? { tenant: l.tenant } : {}) });
    try {
      await handler.cancelTask({ id: l.taskId, tenant: l.tenant ?? '', metadata: {} }, context);
    } catch (err) {
      if (!(err instanceof TaskNotFoundError || err instanceof TaskNotCancelableError)) {
        this.logger.warn(`cancelling task ${l.taskId} with lapsed lease failed; will retry: ${String(err)}`);
        return;
      }
    }
    // Ended one way or another: nothing left to hold.
    await this.leases.delete(l.taskId).catch((err) => this.logger.warn(`forgetting lease failed: ${String(err)}`));
  }

  /** Grants the lease a message asks for, or renews the task's on a reply. */
  async startLease(rc: RequestContext): Promise<Lease | undefined> {
    const now = this.now();
    const ttl = leaseRequest(rc.userMessage, rc.request.metadata, this.maxLeaseTtlMs);
    if (ttl !== undefined) {
      const user = rc.context.user;
      const lease: Lease = { taskId: rc.taskId, ttlMs: ttl, expiresAt: now + ttl };
      if (rc.context.tenant) lease.tenant = rc.context.tenant;
      if (user?.userName) lease.user = user.userName;
      await this.leases.put(lease);
      return lease;
    }
    // A reply to a leased task is a sign of life too.
    return this.leases.renew(rc.taskId, now);
  }

  /**
   * Finds or creates the budget of the task an execution works on. A reply
   * keeps the budget granted with the task's first message; after a restart
   * with a persistent task store it is rebuilt from that message and the
   * last report.
   */
  budgetFor(rc: RequestContext): Budget {
    const known = this.budgets.get(rc.taskId);
    if (known) return known;
    let req = budgetRequest(rc.userMessage, rc.request.metadata);
    let spent: Record<string, number> | undefined;
    const stored = rc.task;
    if (stored) {
      if (req === undefined && stored.history?.[0]) {
        try {
          req = budgetRequest(stored.history[0], undefined);
        } catch {
          req = undefined;
        }
      }
      const last = asObject(asObject(stored.metadata)?.[BUDGET_EXTENSION_URI]);
      const s = asObject(last?.['spent']);
      if (s) spent = Object.fromEntries(Object.entries(s).filter(([, n]) => typeof n === 'number')) as Record<string, number>;
    }
    // Without "meters" the grant is a deadline only; metered spend is unlimited.
    const b = req ? new Budget(req.meters !== undefined, req.meters, spent, req.deadline) : Budget.unlimited(spent);
    this.budgets.set(rc.taskId, b);
    return b;
  }

  /** The in-memory budget of a task; undefined when unknown. */
  budget(taskId: string): Budget | undefined {
    return this.budgets.get(taskId);
  }

  noteContext(taskId: string, contextId: string): void {
    this.contexts.set(taskId, contextId);
  }

  contextOf(taskId: string): string {
    return this.contexts.get(taskId) ?? '';
  }

  /** Forgets the lease and budget of a task that can no longer change. */
  forget(taskId: string): void {
    this.budgets.delete(taskId);
    this.contexts.delete(taskId);
    this.leases.delete(taskId).catch((err) => this.logger.warn(`forgetting lease of ${taskId} failed: ${String(err)}`));
  }
}
