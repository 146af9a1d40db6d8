// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// A test agent served with the kit on loopback, and a JSON-RPC client that
// speaks the wire directly, so the tests see exactly what a client sees.

import { setTimeout as sleep } from 'node:timers/promises';

import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';

import {
  BudgetExhaustedError,
  JSONRPC_PATH,
  LEGACY_JSONRPC_PATH,
  serve,
  statusEvent,
  type KitAgentExecutor,
  type Served,
  type ServeOptions,
  type TaskScope,
} from '../src/index.js';

export const quiet = { info: () => {}, warn: () => {} };

/** A clock the test moves; starts at the real time. */
export class FakeClock {
  t = Date.now();
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export const textOf = (rc: RequestContext): string =>
  (rc.userMessage?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

/** What the test agent saw, per task. */
export interface Seen {
  executed: string[];
  cancelled: string[];
  aborted: Map<string, unknown>;
  scopes: Map<string, TaskScope>;
}

/**
 * The test agent. Its message text says what a task does:
 *   "wait"              runs until its signal fires
 *   "spend N METER"     charges N of METER, then completes
 *   "overspend"         charges more than granted and returns
 *   "throw-exhausted"   throws BudgetExhaustedError
 *   "input"             asks for input; a reply completes it
 *   else                completes
 */
export function testAgent(seen: Seen): KitAgentExecutor {
  return {
    async execute(rc: RequestContext, bus: ExecutionEventBus, scope: TaskScope) {
      const text = textOf(rc);
      seen.executed.push(rc.taskId);
      seen.scopes.set(rc.taskId, scope);
      scope.signal.addEventListener('abort', () => seen.aborted.set(rc.taskId, scope.signal.reason));
      const task = rc.task ?? {
        id: rc.taskId,
        contextId: rc.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        history: [rc.userMessage],
        artifacts: [],
        metadata: {},
      };
      bus.publish(AgentEvent.task(task));
      if (rc.task) {
        bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_COMPLETED));
        return;
      }
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_WORKING));
      const [verb, n, meter] = text.split(' ');
      switch (verb) {
        case 'wait':
          await new Promise((resolve) => scope.signal.addEventListener('abort', resolve));
          return;
        case 'spend':
          scope.budget.charge(meter ?? 'tokens', Number(n));
          break;
        case 'overspend':
          try {
            scope.budget.charge('tokens', 1_000_000);
          } catch {
            return; // just stops: the kit fails it with the right class
          }
          break;
        case 'throw-exhausted':
          throw new BudgetExhaustedError('out of tokens');
        case 'input':
          bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_INPUT_REQUIRED));
          return;
      }
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_COMPLETED));
    },
    async cancelTask(taskId: string, bus: ExecutionEventBus) {
      seen.cancelled.push(taskId);
      bus.publish(statusEvent(taskId, '', TaskState.TASK_STATE_CANCELED));
    },
  };
}

export interface TestAgent {
  served: Served;
  seen: Seen;
  rpc: Client;
  legacy: Client;
  close(): Promise<void>;
}

export async function startTestAgent(opts: ServeOptions = {}, exec?: (seen: Seen) => KitAgentExecutor): Promise<TestAgent> {
  const seen: Seen = { executed: [], cancelled: [], aborted: new Map(), scopes: new Map() };
  const served = await serve(
    { name: 'test', description: 'test agent', version: '0.0.0', capabilities: { extensions: [] } } as never,
    (exec ?? testAgent)(seen),
    { logger: quiet, ...opts },
  );
  return {
    served,
    seen,
    rpc: new Client(served.url + JSONRPC_PATH, { 'A2A-Version': '1.0' }, 'A2A-Extensions'),
    legacy: new Client(served.url + LEGACY_JSONRPC_PATH, {}, 'X-A2A-Extensions'),
    close: () => served.close(),
  };
}

export interface RpcAnswer {
  result?: any;
  error?: { code: number; message: string };
  headers: Headers;
}

/** A JSON-RPC client of one binding. */
export class Client {
  private id = 0;
  constructor(
    readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly extensionHeader: string,
  ) {}

  async call(method: string, params: unknown, extensions: string[] = []): Promise<RpcAnswer> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...this.headers };
    if (extensions.length > 0) headers[this.extensionHeader] = extensions.join(', ');
    const res = await fetch(this.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params }),
    });
    const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
    return { ...body, headers: res.headers };
  }

  /**
   * A streaming call read to its end: the JSON-RPC answers of its
   * server-sent events, or the one plain answer when no stream was opened
   * (then opened is false).
   */
  async stream(method: string, params: unknown, extensions: string[] = []): Promise<any[] & { opened?: boolean }> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...this.headers };
    if (extensions.length > 0) headers[this.extensionHeader] = extensions.join(', ');
    const res = await fetch(this.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params }),
    });
    const text = await res.text();
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return Object.assign([JSON.parse(text)], { opened: false });
    return text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5)))
      .concat() as any[] & { opened?: boolean };
  }
}

let counter = 0;

/** A 1.0 SendMessage's params. */
export function send(text: string, metadata: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  counter++;
  return {
    message: {
      messageId: `m-${process.pid}-${counter}`,
      contextId: `ctx-${process.pid}-${counter}`,
      role: 'ROLE_USER',
      parts: [{ text }],
      metadata,
      ...extra,
    },
    configuration: { returnImmediately: true },
  };
}

/** Polls GetTask until the task is in state (1.0 names, e.g. TASK_STATE_CANCELED). */
export async function waitState(c: Client, id: string, state: string, timeoutMs = 15_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < until) {
    const a = await c.call('GetTask', { id });
    last = a.result ?? a.error;
    if (a.result?.status?.state === state) return a.result;
    await sleep(20);
  }
  throw new Error(`task ${id} did not reach ${state}; last seen ${JSON.stringify(last)}`);
}

/** Polls until cond holds. */
export async function eventually(cond: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (cond()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}
