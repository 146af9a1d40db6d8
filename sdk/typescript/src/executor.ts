// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import { randomUUID } from 'node:crypto';

import { Role, TaskState, type Message, type Task, type TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';

import { Budget, BudgetExhaustedError } from './budget.js';
import { BUDGET_EXTENSION_URI, FAILURE_CLASS_METADATA_KEY, LEASE_EXTENSION_URI, type FailureClass } from './constants.js';
import type { Kit } from './kit.js';
import { leaseGrantMeta, type Lease } from './lease.js';
import { runInScope, type TaskScope } from './scope.js';
import { delegationOf } from './claim.js';
import { callerOf } from './caller.js';

/**
 * An AgentExecutor the kit wraps. It is the SDK's interface with the task's
 * scope (budget, Delegation, abort signal) as a third argument; a plain
 * AgentExecutor fits too, and reaches the scope with currentTask(). Without
 * cancelTask the kit aborts the scope's signal and ends the task Canceled.
 */
export interface KitAgentExecutor {
  execute(requestContext: RequestContext, eventBus: ExecutionEventBus, scope: TaskScope): Promise<void>;
  cancelTask?(taskId: string, eventBus: ExecutionEventBus): Promise<void>;
}

const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** Terminal: nothing more can happen to the task. */
export function terminal(s: TaskState | undefined): boolean {
  return s !== undefined && TERMINAL.has(s);
}

/** Settled for this execution: terminal, or handed back to the client. */
function settles(s: TaskState | undefined): boolean {
  return terminal(s) || s === TaskState.TASK_STATE_INPUT_REQUIRED || s === TaskState.TASK_STATE_AUTH_REQUIRED;
}

/** A text message from the agent about a task. */
export function agentMessage(taskId: string, contextId: string, text: string, metadata: Record<string, unknown> = {}): Message {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_AGENT,
    taskId,
    contextId,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} }],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A status update event. */
export function statusEvent(taskId: string, contextId: string, state: TaskState, message?: Message): AgentExecutionEvent {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, message, timestamp: new Date().toISOString() },
    metadata: {},
  });
}

/**
 * A status update that fails a task with a failure class in the status
 * message metadata, where the operator reads it.
 */
export function failEvent(taskId: string, contextId: string, failureClass: FailureClass, text: string): AgentExecutionEvent {
  return statusEvent(
    taskId,
    contextId,
    TaskState.TASK_STATE_FAILED,
    agentMessage(taskId, contextId, text, { [FAILURE_CLASS_METADATA_KEY]: failureClass }),
  );
}

/** Why the scope's signal was aborted: the budget deadline passed. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/** Why the scope's signal was aborted: the task was cancelled. */
export class CanceledError extends Error {
  override name = 'CanceledError';
}

/** One execution of a task: what the kit decorates its events with. */
class Run {
  taskExists: boolean;
  settled = false;
  /** Events from the agent are dropped once the kit had the last word. */
  closed = false;
  readonly abort = new AbortController();
  private stop!: () => void;
  /** Resolves when the kit stops the run (cancel or deadline). */
  readonly stopped = new Promise<void>((resolve) => (this.stop = resolve));
  /** Called once a cancel of this run wrote the task's final state. */
  finishCancel!: () => void;
  /**
   * Resolves once a cancel wrote the final state: the execution must not end
   * before that, or the SDK would close the task's event bus under it.
   */
  readonly cancelFinished = new Promise<void>((resolve) => (this.finishCancel = resolve));

  constructor(
    readonly kit: Kit,
    readonly taskId: string,
    readonly contextId: string,
    readonly bus: ExecutionEventBus,
    readonly budget: Budget,
    readonly lease: Lease | undefined,
    taskExists: boolean,
  ) {
    this.taskExists = taskExists;
  }

  halt(reason: Error): void {
    this.abort.abort(reason);
    this.stop();
  }

  /** Decorates an event on its way to the task store and forwards it. */
  publish(ev: AgentExecutionEvent): void {
    this.decorate(ev);
    this.bus.publish(ev);
    if (ev.kind === 'message' || (ev.kind !== 'artifactUpdate' && terminal(stateOf(ev)))) {
      this.kit.forget(this.taskId);
    }
  }

  decorate(ev: AgentExecutionEvent): void {
    switch (ev.kind) {
      case 'message':
        this.settled = true;
        break;
      case 'task': {
        const t: Task = ev.data;
        this.taskExists = true;
        if (this.lease) t.metadata = { ...t.metadata, [LEASE_EXTENSION_URI]: leaseGrantMeta(this.lease) };
        this.stampBudget(t, t.status?.message);
        this.note(t.status?.state);
        break;
      }
      case 'statusUpdate': {
        const u: TaskStatusUpdateEvent = ev.data;
        if (u.status?.state === TaskState.TASK_STATE_FAILED && this.budget.exhausted) {
          // The agent failed after a refused charge; say why if it did not.
          u.status.message ??= agentMessage(this.taskId, this.contextId, 'budget exhausted');
          u.status.message.metadata ??= {};
          if (!Object.hasOwn(u.status.message.metadata, FAILURE_CLASS_METADATA_KEY)) {
            u.status.message.metadata[FAILURE_CLASS_METADATA_KEY] = 'BudgetExhausted';
          }
        }
        this.stampBudget(u, u.status?.message);
        this.note(u.status?.state);
        break;
      }
      case 'artifactUpdate':
        break;
    }
  }

  /**
   * Puts the budget report on the event (which the SDK merges into the
   * task's metadata) and on its status message when there is one.
   */
  private stampBudget(carrier: { metadata: Record<string, unknown> | undefined }, message: Message | undefined): void {
    if (!this.budget.reports()) return;
    const report = this.budget.report();
    carrier.metadata = { ...carrier.metadata, [BUDGET_EXTENSION_URI]: report };
    if (message) message.metadata = { ...message.metadata, [BUDGET_EXTENSION_URI]: report };
  }

  private note(s: TaskState | undefined): void {
    if (settles(s)) this.settled = true;
  }

  /** Ends the task Failed, class BudgetExhausted, creating it first when the agent never did. */
  failBudget(requestContext: RequestContext, text: string): void {
    this.closed = true;
    if (!this.taskExists) {
      this.publish(
        AgentEvent.task({
          id: this.taskId,
          contextId: this.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          history: [requestContext.userMessage],
          artifacts: [],
          metadata: {},
        }),
      );
    }
    this.publish(failEvent(this.taskId, this.contextId, 'BudgetExhausted', text));
  }
}

function stateOf(ev: AgentExecutionEvent): TaskState | undefined {
  if (ev.kind === 'task') return ev.data.status?.state;
  if (ev.kind === 'statusUpdate') return ev.data.status?.state;
  return undefined;
}

/** The bus the agent sees: events pass the run's decoration, or are dropped once it closed. */
function busFor(run: Run): ExecutionEventBus {
  const bus = run.bus;
  const wrapped: ExecutionEventBus = {
    publish(ev) {
      if (!run.closed) run.publish(ev);
    },
    finished: () => bus.finished(),
    on: (name: never, l: never) => (bus.on(name, l), wrapped),
    off: (name: never, l: never) => (bus.off(name, l), wrapped),
    once: (name: never, l: never) => (bus.once(name, l), wrapped),
    removeAllListeners: (name) => (bus.removeAllListeners(name), wrapped),
  };
  return wrapped;
}

// setTimeout holds at most 2^31-1 ms; a later deadline is waited for in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Wraps an agent's executor with the lease and budget extensions. */
export class KitExecutor implements AgentExecutor {
  /** The run currently executing per task, for cancelTask to stop. */
  private readonly runs = new Map<string, Run>();

  constructor(
    private readonly kit: Kit,
    private readonly inner: KitAgentExecutor,
  ) {}

  execute = async (requestContext: RequestContext, eventBus: ExecutionEventBus): Promise<void> => {
    const kit = this.kit;
    const { taskId, contextId } = requestContext;
    const lease = await kit.startLease(requestContext);
    const budget = kit.budgetFor(requestContext);
    const run = new Run(kit, taskId, contextId, eventBus, budget, lease, requestContext.task !== undefined);
    this.runs.set(taskId, run);
    kit.noteContext(taskId, contextId);

    let timer: NodeJS.Timeout | undefined;
    const deadline = budget.deadline;
    const armDeadline = (): boolean => {
      if (deadline === undefined) return true;
      const wait = deadline - kit.now();
      if (wait <= 0) return false;
      timer = setTimeout(() => (deadline - kit.now() <= 0 ? run.halt(new DeadlineError('budget deadline passed')) : armDeadline()), Math.min(wait, MAX_TIMER_MS));
      return true;
    };
    try {
      if (!armDeadline()) {
        run.failBudget(requestContext, 'budget deadline passed before the task started');
        return;
      }
      const scope: TaskScope = { taskId, contextId, budget, origins: kit.origins, recordEvents: kit.recordEvents, signal: run.abort.signal };
      const caller = callerOf(requestContext.context?.user);
      if (caller) scope.caller = caller;
      if (kit.operator) scope.operator = kit.operator;
      const claim = delegationOf(requestContext);
      if (claim) scope.delegation = { ...claim, caller: caller?.username };
      const work = runInScope(scope, () => this.inner.execute(requestContext, busFor(run), scope));
      work.catch(() => {}); // its outcome is read below; a late rejection after a stop is not unhandled
      try {
        await Promise.race([work, run.stopped]);
      } catch (err) {
        if (run.abort.signal.aborted) {
          // the deadline or the cancel has the last word
        } else if (err instanceof BudgetExhaustedError) {
          run.failBudget(requestContext, err.message);
          return;
        } else {
          throw err;
        }
      }
      const stoppedBy = run.abort.signal.reason;
      if (stoppedBy instanceof CanceledError) await run.cancelFinished;
      if (stoppedBy instanceof DeadlineError) {
        if (!run.closed) run.failBudget(requestContext, 'budget deadline passed');
      } else if (stoppedBy instanceof CanceledError) {
        // cancelTask writes the last word
      } else if (!run.settled && !run.closed && budget.exhausted) {
        run.failBudget(requestContext, 'budget exhausted');
      }
    } finally {
      clearTimeout(timer);
      if (this.runs.get(taskId) === run) this.runs.delete(taskId);
    }
  };

  /**
   * Lets the agent stop its work and guarantees the task ends Canceled; a
   * task whose lease lapsed says so in the status message.
   */
  cancelTask = async (taskId: string, eventBus: ExecutionEventBus): Promise<void> => {
    const kit = this.kit;
    const lease = await kit.leases.get(taskId);
    const reason =
      lease && kit.now() >= lease.expiresAt
        ? `lease expired at ${new Date(lease.expiresAt).toISOString()} without renewal`
        : undefined;
    const contextId = kit.contextOf(taskId);
    const executing = this.runs.get(taskId);
    const run = new Run(kit, taskId, contextId, eventBus, kit.budget(taskId) ?? Budget.unlimited(), undefined, true);
    kit.logger.info(`task ${taskId} cancel requested${reason ? ` (${reason})` : ''}`);
    executing?.halt(new CanceledError('task canceled'));
    try {
      await this.cancel(taskId, contextId, reason, run);
    } finally {
      if (executing) executing.closed = true; // the agent's own later events would follow a terminal state
      executing?.finishCancel();
    }
  };

  private async cancel(taskId: string, contextId: string, reason: string | undefined, run: Run): Promise<void> {
    const cancelBus: ExecutionEventBus = {
      ...busFor(run),
      publish(ev) {
        if (reason && ev.kind === 'statusUpdate' && ev.data.status?.state === TaskState.TASK_STATE_CANCELED) {
          ev.data.status.message = agentMessage(taskId, contextId, reason);
        }
        run.publish(ev);
      },
    };
    if (this.inner.cancelTask) await this.inner.cancelTask(taskId, cancelBus);
    if (!run.settled) {
      run.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_CANCELED, reason ? agentMessage(taskId, contextId, reason) : undefined));
    }
  }
}
