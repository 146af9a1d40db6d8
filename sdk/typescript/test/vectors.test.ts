// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// The extensions' published test vectors (docs/extensions/vectors), run
// against the kit served on loopback, and every answer the kit gives checked
// against the published JSON Schemas (docs/extensions/schemas): the same
// files the operator, the Go agentkit and kubectl tether check-agent are
// tested with.

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, describe, it } from 'node:test';

import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

import { BUDGET_EXTENSION_URI, FAILURE_CLASS_METADATA_KEY, Kit, LEASE_EXTENSION_URI, statusEvent, type KitAgentExecutor, type TaskScope } from '../src/index.js';
import { FakeClock, send, startTestAgent, textOf, waitState, type TestAgent } from './helpers.js';

const docs = new URL('../../../../docs/extensions/', import.meta.url);
const readJSON = (rel: string): any => JSON.parse(readFileSync(new URL(rel, docs), 'utf8'));

// ajv-formats is CommonJS; its default export is the plugin function.
const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (a: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const schema = (name: string) => {
  const v = ajv.compile(readJSON(`schemas/${name}.schema.json`));
  return (value: unknown, what: string) => assert.ok(v(value), `${what} ${JSON.stringify(value)} is not valid against ${name}: ${ajv.errorsText(v.errors)}`);
};
const leaseRequestValid = ajv.compile(readJSON('schemas/lease-v1.request.schema.json'));
const budgetRequestValid = ajv.compile(readJSON('schemas/budget-v1.request.schema.json'));
const validLeaseAnswer = schema('lease-v1.answer');
const validReport = schema('budget-v1.status-update');
const validFailureClass = schema('failure-class');
const validCardParams = schema('lease-v1.card-params');

const vectorFiles = readdirSync(new URL('vectors/', docs))
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, ...readJSON(`vectors/${f}`) }));

/** The harness executor of docs/extensions/README.md. */
function harness(charges: Map<string, string[]>): KitAgentExecutor {
  return {
    async execute(rc: RequestContext, bus: ExecutionEventBus, scope: TaskScope) {
      const text = textOf(rc).trim() || 'complete';
      bus.publish(
        AgentEvent.task({
          id: rc.taskId,
          contextId: rc.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          history: [rc.userMessage],
          artifacts: [],
          metadata: {},
        }),
      );
      if (text === 'ask') {
        bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_INPUT_REQUIRED));
        return;
      }
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_WORKING));
      if (text === 'work') {
        await new Promise((resolve) => scope.signal.addEventListener('abort', resolve));
        return;
      }
      if (text.startsWith('charge ')) {
        const seen: string[] = [];
        charges.set(rc.taskId, seen);
        for (const step of text.split(';')) {
          const [, meter, amount] = step.trim().split(/\s+/);
          try {
            scope.budget.charge(meter!, Number(amount));
            seen.push('ok');
          } catch {
            seen.push('exhausted');
            return; // the work stops at the first refused charge
          }
        }
      }
      bus.publish(statusEvent(rc.taskId, rc.contextId, TaskState.TASK_STATE_COMPLETED));
    },
  };
}

/** Agents by maxTTLSeconds, each with its own fake clock. */
const agents = new Map<number, { agent: TestAgent; clock: FakeClock; charges: Map<string, string[]> }>();
async function agentFor(v: any) {
  const max = v.agent?.maxTTLSeconds ?? 3600;
  let a = agents.get(max);
  if (!a) {
    const clock = new FakeClock();
    const charges = new Map<string, string[]>();
    const agent = await startTestAgent({ now: clock.now, sweepIntervalMs: 20, maxLeaseTtlMs: max * 1000 }, () => harness(charges));
    a = { agent, clock, charges };
    agents.set(max, a);
  }
  return a;
}
after(async () => {
  for (const { agent } of agents.values()) await agent.close();
});

const dropZeros = (m: Record<string, number> | undefined) => Object.fromEntries(Object.entries(m ?? {}).filter(([, n]) => n !== 0));

/** Checks the settling update's state, failure class and budget report. */
function checkSettled(task: any, expect: any) {
  if (expect.settle) {
    assert.equal(task.status.state, expect.settle.state, JSON.stringify(task.status));
    const fc = task.status.message?.metadata?.[FAILURE_CLASS_METADATA_KEY];
    if (expect.settle.failureClass) assert.equal(fc, expect.settle.failureClass);
    if (fc !== undefined) validFailureClass(fc, 'failureClass');
  }
  if (expect.report) {
    // The settling update's report: on its status message, and merged into the task.
    const onMessage = task.status.message?.metadata?.[BUDGET_EXTENSION_URI];
    const report = onMessage ?? task.metadata?.[BUDGET_EXTENSION_URI];
    assert.ok(report !== undefined, `no budget report on the settling update: ${JSON.stringify(task)}`);
    if (onMessage !== undefined) assert.deepEqual(task.metadata[BUDGET_EXTENSION_URI], onMessage);
    validReport(report, 'the budget report');
    assert.deepEqual(report.left ?? {}, expect.report.left ?? {}, 'left');
    assert.deepEqual(dropZeros(report.spent), dropZeros(expect.report.spent), 'spent');
  }
}

async function waitSettled(a: TestAgent, id: string): Promise<any> {
  for (const state of ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_INPUT_REQUIRED']) {
    const got = (await a.rpc.call('GetTask', { id })).result;
    if (got?.status?.state === state) return got;
  }
  return waitState(a.rpc, id, 'TASK_STATE_COMPLETED').catch(async () => (await a.rpc.call('GetTask', { id })).result);
}

describe('the card', () => {
  it("declares the lease extension with parameters valid against the schema", () => {
    const lease = new Kit({ maxLeaseTtlMs: 10_000 }).extensions().find((e) => e.uri === LEASE_EXTENSION_URI);
    validCardParams(lease?.params, 'the lease card params');
    assert.deepEqual(lease?.params, { maxTTLSeconds: 10 });
  });
});

const validVectorFile = schema('vector-file');

for (const f of vectorFiles) {
  describe(`vectors ${f.file}`, () => {
    it('is a vector file as its schema describes it', () => {
      const { file: _file, ...content } = f;
      validVectorFile(content, f.file);
    });
    for (const v of f.vectors) {
      it(v.name, async () => {
        const { agent: a, clock, charges } = await agentFor(v);
        const ext = [f.extension];
        if (v.kind === 'send') {
          const params: any = send('complete', v.message?.metadata ?? {});
          params.configuration = {};
          if (v.request?.metadata) params.metadata = v.request.metadata;
          const data = v.message?.metadata?.[f.extension] ?? v.request?.metadata?.[f.extension];
          const present = v.message?.metadata?.[f.extension] !== undefined || Object.hasOwn(v.message?.metadata ?? {}, f.extension) || Object.hasOwn(v.request?.metadata ?? {}, f.extension);
          const schemaValid = !present || (f.extension === LEASE_EXTENSION_URI ? leaseRequestValid : budgetRequestValid)(data);
          const sentAt = clock.now();
          const ans = await a.rpc.call('SendMessage', params, ext);
          if (v.expect.outcome === 'refused') {
            assert.equal(ans.error?.code, v.expect.error.code, JSON.stringify(ans));
            const list = await a.rpc.call('ListTasks', { contextId: params.message.contextId });
            assert.deepEqual(list.result?.tasks ?? [], [], 'a refused send started a task');
            return;
          }
          assert.ok(schemaValid, 'the vector is accepted although its data is not valid against the request schema');
          assert.equal(ans.error, undefined, JSON.stringify(ans));
          const task = ans.result.task;
          const lease = task.metadata?.[LEASE_EXTENSION_URI];
          if (v.expect.lease === null) assert.equal(lease, undefined);
          else if (v.expect.lease) {
            validLeaseAnswer(lease, 'the lease answer');
            assert.equal(Date.parse(lease.expiresAt), sentAt + v.expect.lease.expiresInSeconds * 1000);
          }
          checkSettled(task, v.expect);
        } else if (v.kind === 'charges') {
          const text = v.charges.map((c: any) => `charge ${c.meter} ${c.amount}`).join('; ');
          const ans = await a.rpc.call('SendMessage', { ...send(text, { [BUDGET_EXTENSION_URI]: v.grant }), configuration: {} }, ext);
          const task = ans.result?.task ?? (await waitSettled(a, ans.result.task.id));
          assert.deepEqual(charges.get(task.id), v.charges.map((c: any) => c.expect), 'the charges');
          checkSettled(task, v.expect);
        } else if (v.kind === 'lease-timeline') {
          const t0 = clock.now();
          clock.t = t0;
          let id = '';
          for (const step of v.steps) {
            clock.t = t0 + step.at * 1000;
            const at = (s: number) => t0 + s * 1000;
            if (step.op === 'send') {
              const ans = await a.rpc.call('SendMessage', send(v.executor ?? 'work', { [LEASE_EXTENSION_URI]: { ttlSeconds: step.ttlSeconds } }), ext);
              assert.equal(ans.error, undefined, JSON.stringify(ans));
              id = ans.result.task.id;
              validLeaseAnswer(ans.result.task.metadata[LEASE_EXTENSION_URI], 'the lease answer');
              assert.equal(Date.parse(ans.result.task.metadata[LEASE_EXTENSION_URI].expiresAt), at(step.expect.expiresAt));
            } else if (step.op === 'get') {
              const until = Date.now() + 5000;
              for (;;) {
                const got = (await a.rpc.call('GetTask', { id }, step.activate ? ext : [])).result;
                const lease = got?.metadata?.[LEASE_EXTENSION_URI];
                try {
                  if (lease !== undefined) validLeaseAnswer(lease, 'the lease answer');
                  if (step.expect.state) assert.equal(got.status.state, step.expect.state);
                  if (step.expect.expiresAt !== undefined) assert.equal(Date.parse(lease.expiresAt), at(step.expect.expiresAt));
                  if (step.expect.expiresAtNotAfter !== undefined) assert.ok(Date.parse(lease.expiresAt) <= at(step.expect.expiresAtNotAfter));
                  break;
                } catch (err) {
                  if (Date.now() > until) throw err;
                  await new Promise((r) => setTimeout(r, 20));
                }
              }
            } else if (step.op === 'await') {
              await waitState(a.rpc, id, step.expect.state);
            } else {
              assert.fail(`unknown step ${step.op}`);
            }
          }
        } else {
          assert.fail(`unknown vector kind ${v.kind}`);
        }
      });
    }
  });
}
