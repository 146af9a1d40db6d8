// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { TaskState } from '@a2a-js/sdk';
import type { ExecutionEventBus } from '@a2a-js/sdk/server';

import { BUDGET_EXTENSION_URI, Budget, BudgetExhaustedError, DeadlineError, budgetRequest, statusEvent } from '../src/index.js';
import { eventually, send, startTestAgent, testAgent, waitState, type TestAgent } from './helpers.js';

const budget = (v: unknown) => ({ [BUDGET_EXTENSION_URI]: v });

describe('budgetRequest', () => {
  it('reads meters and a deadline', () => {
    assert.deepEqual(budgetRequest(undefined, budget({ meters: { tokens: 5 }, deadline: '2030-01-01T00:00:00Z' })), {
      meters: { tokens: 5 },
      deadline: Date.parse('2030-01-01T00:00:00Z'),
    });
    assert.deepEqual(budgetRequest(undefined, budget({ deadline: '2030-01-01T00:00:00+02:00' })), {
      deadline: Date.parse('2030-01-01T00:00:00+02:00'),
    });
    assert.equal(budgetRequest(undefined, {}), undefined);
  });
  for (const [what, v] of [
    ['a negative meter', { meters: { tokens: -1 } }],
    ['a fractional meter', { meters: { tokens: 1.5 } }],
    ['a meter that is a string', { meters: { tokens: '5' } }],
    ['meters that are a list', { meters: [1] }],
    ['a deadline that is no RFC 3339 time', { deadline: 'tomorrow' }],
    ['data that is no object', 'lots'],
  ] as const) {
    it(`refuses ${what}`, () => assert.throws(() => budgetRequest(undefined, budget(v)), /budget/));
  }
});

describe('Budget', () => {
  it('charges within the grant, refuses beyond it, and reports only granted meters as left', () => {
    const b = new Budget(true, { tokens: 100 });
    b.charge('tokens', 30);
    assert.deepEqual(b.report(), { spent: { tokens: 30 }, left: { tokens: 70 } });
    assert.throws(() => b.charge('tokens', 71), BudgetExhaustedError);
    assert.throws(() => b.charge('calls', 1), BudgetExhaustedError, 'a meter not granted is 0');
    assert.ok(b.exhausted);
    assert.deepEqual(b.spent(), { tokens: 30 });
    assert.throws(() => b.charge('tokens', -1), RangeError);
  });
  it('is unlimited without meters and still counts', () => {
    const b = Budget.unlimited();
    assert.ok(!b.reports());
    b.charge('tokens', 1e9);
    assert.deepEqual(b.report(), { spent: { tokens: 1e9 } });
    assert.equal(b.left(), undefined);
  });
  it('holds a child grant once, settles it to the charge, releases it when never created', () => {
    const b = new Budget(true, { tokens: 100 });
    b.reserve('c1', { tokens: 60 });
    b.reserve('c1', { tokens: 60 }); // a retry holds nothing more
    assert.deepEqual(b.left(), { tokens: 40 });
    assert.throws(() => b.reserve('c2', { tokens: 41 }), BudgetExhaustedError);
    b.settle('c1', { tokens: 10 });
    assert.deepEqual(b.left(), { tokens: 90 });
    b.reserve('c3', { tokens: 50 });
    b.settle('c3', undefined); // ended without a report: the whole hold stays
    assert.deepEqual(b.left(), { tokens: 40 });
    b.reserve('c4', { tokens: 40 });
    b.release('c4');
    assert.deepEqual(b.left(), { tokens: 40 });
    assert.deepEqual(b.spent(), {}, 'holds are not own spend');
  });
});

describe('budget extension on the wire', () => {
  let a: TestAgent;
  before(async () => {
    a = await startTestAgent();
  });
  after(() => a.close());

  it('refuses malformed budget data with -32602 and starts nothing', async () => {
    const n = a.seen.executed.length;
    const ans = await a.rpc.call('SendMessage', send('spend 1 tokens', budget({ meters: { tokens: -3 } })));
    assert.equal(ans.error?.code, -32602);
    assert.equal(a.seen.executed.length, n);
  });

  it('reports spend on every status update, the settling one included', async () => {
    const ans = await a.rpc.call('SendMessage', { ...send('spend 30 tokens', budget({ meters: { tokens: 100, calls: 2 } })), configuration: {} });
    const task = ans.result.task;
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    assert.deepEqual(task.metadata[BUDGET_EXTENSION_URI], { spent: { tokens: 30 }, left: { tokens: 70, calls: 2 } });
  });

  it('every streamed status update carries the report, before and after the charge', async () => {
    const events = await a.rpc.stream('SendStreamingMessage', send('spend 30 tokens', budget({ meters: { tokens: 100 } })));
    const updates = events.map((e) => e.result?.statusUpdate).filter(Boolean);
    assert.deepEqual(
      updates.map((u) => [u.status.state, u.metadata?.[BUDGET_EXTENSION_URI]]),
      [
        ['TASK_STATE_WORKING', { left: { tokens: 100 } }],
        ['TASK_STATE_COMPLETED', { spent: { tokens: 30 }, left: { tokens: 70 } }],
      ],
    );
  });

  it('refuses a streaming send with bad data as an error answer, opening no stream', async () => {
    const n = a.seen.executed.length;
    const answers = await a.rpc.stream('SendStreamingMessage', send('spend 1 tokens', budget({ meters: { tokens: 1.5 } })));
    assert.equal(answers.opened, false, `a stream was opened: ${JSON.stringify(answers)}`);
    assert.equal(answers[0].error?.code, -32602, JSON.stringify(answers));
    assert.equal(a.seen.executed.length, n);
  });

  it('puts the report on the settling status message too', async () => {
    const ans = await a.rpc.call('SendMessage', { ...send('throw-exhausted', budget({ meters: { tokens: 10 } })), configuration: {} });
    const task = ans.result.task;
    assert.equal(task.status.state, 'TASK_STATE_FAILED');
    assert.equal(task.status.message.metadata.failureClass, 'BudgetExhausted');
    assert.deepEqual(task.status.message.metadata[BUDGET_EXTENSION_URI], { left: { tokens: 10 } });
  });

  it('a meter not granted is 0: charging it fails the task BudgetExhausted', async () => {
    const ans = await a.rpc.call('SendMessage', { ...send('spend 1 calls', budget({ meters: { tokens: 10 } })), configuration: {} });
    const task = ans.result.task;
    assert.equal(task.status.state, 'TASK_STATE_FAILED');
    assert.equal(task.status.message.metadata.failureClass, 'BudgetExhausted');
    assert.deepEqual(task.metadata[BUDGET_EXTENSION_URI], { left: { tokens: 10 } });
  });

  it('an agent that stops after a refused charge is failed BudgetExhausted', async () => {
    const ans = await a.rpc.call('SendMessage', { ...send('overspend', budget({ meters: { tokens: 10 } })), configuration: {} });
    assert.equal(ans.result.task.status.state, 'TASK_STATE_FAILED');
    assert.equal(ans.result.task.status.message.metadata.failureClass, 'BudgetExhausted');
  });

  it('fails a task whose deadline passed before it started, without running it', async () => {
    const n = a.seen.executed.length;
    const past = new Date(Date.now() - 1000).toISOString();
    const ans = await a.rpc.call('SendMessage', { ...send('spend 1 tokens', budget({ deadline: past })), configuration: {} });
    assert.equal(ans.result.task.status.state, 'TASK_STATE_FAILED');
    assert.equal(ans.result.task.status.message.metadata.failureClass, 'BudgetExhausted');
    assert.equal(a.seen.executed.length, n);
  });

  it('stops a task at its deadline: the signal fires and the task fails BudgetExhausted', async () => {
    // Far enough ahead that a loaded machine still starts the task before it.
    const soon = new Date(Date.now() + 2000).toISOString();
    const ans = await a.rpc.call('SendMessage', send('wait', budget({ deadline: soon, meters: { tokens: 5 } })));
    const id = ans.result.task.id;
    const task = await waitState(a.rpc, id, 'TASK_STATE_FAILED');
    assert.equal(task.status.message.metadata.failureClass, 'BudgetExhausted');
    assert.match(task.status.message.parts[0].text, /deadline/);
    await eventually(() => a.seen.aborted.has(id), 'the signal');
    assert.ok(a.seen.aborted.get(id) instanceof DeadlineError);
  });

  it('a reply keeps the budget granted with the first message', async () => {
    const ans = await a.rpc.call('SendMessage', send('input', budget({ meters: { tokens: 7 } })));
    const id = ans.result.task.id;
    await waitState(a.rpc, id, 'TASK_STATE_INPUT_REQUIRED');
    const reply = send('blue');
    await a.rpc.call('SendMessage', { ...reply, message: { ...reply.message, taskId: id, contextId: ans.result.task.contextId } });
    const done = await waitState(a.rpc, id, 'TASK_STATE_COMPLETED');
    assert.deepEqual(done.metadata[BUDGET_EXTENSION_URI], { left: { tokens: 7 } });
  });
});

describe('cancel', () => {
  let a: TestAgent;
  before(async () => {
    a = await startTestAgent();
  });
  after(() => a.close());

  it('reaches the agent, aborts the signal and ends the task Canceled', async () => {
    const ans = await a.rpc.call('SendMessage', send('wait'));
    const id = ans.result.task.id;
    await waitState(a.rpc, id, 'TASK_STATE_WORKING');
    const c = await a.rpc.call('CancelTask', { id });
    assert.equal(c.result?.status?.state, 'TASK_STATE_CANCELED', JSON.stringify(c));
    assert.ok(a.seen.cancelled.includes(id));
    await eventually(() => a.seen.aborted.has(id), 'the signal');
  });

  it('ends the task Canceled when the agent cancels slowly and its work returns at once', async () => {
    const b = await startTestAgent({}, (seen) => {
      const { execute } = testAgent(seen);
      return {
        execute,
        async cancelTask(taskId: string, bus: ExecutionEventBus) {
          await new Promise((r) => setTimeout(r, 100)); // the work has returned on the signal by now
          bus.publish(statusEvent(taskId, '', TaskState.TASK_STATE_CANCELED));
        },
      };
    });
    try {
      const ans = await b.rpc.call('SendMessage', send('wait'));
      const id = ans.result.task.id;
      await waitState(b.rpc, id, 'TASK_STATE_WORKING');
      const c = await b.rpc.call('CancelTask', { id });
      assert.equal(c.result?.status?.state, 'TASK_STATE_CANCELED', JSON.stringify(c));
    } finally {
      await b.close();
    }
  });

  it('ends the task Canceled for an agent without cancelTask', async () => {
    const b = await startTestAgent({}, (seen) => {
      const { execute } = testAgent(seen);
      return { execute };
    });
    try {
      const ans = await b.rpc.call('SendMessage', send('wait'));
      const id = ans.result.task.id;
      await waitState(b.rpc, id, 'TASK_STATE_WORKING');
      const c = await b.rpc.call('CancelTask', { id });
      assert.equal(c.result?.status?.state, 'TASK_STATE_CANCELED', JSON.stringify(c));
      await eventually(() => b.seen.aborted.has(id), 'the signal');
    } finally {
      await b.close();
    }
  });
});
