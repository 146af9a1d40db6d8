// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { LEASE_EXTENSION_URI, MemoryLeaseStore, leaseRequest } from '../src/index.js';
import { FakeClock, eventually, send, startTestAgent, waitState, type TestAgent } from './helpers.js';

const lease = (ttlSeconds: unknown) => ({ [LEASE_EXTENSION_URI]: { ttlSeconds } });

describe('leaseRequest', () => {
  const max = 3600_000;
  it('grants a ttl within 1s..max, in milliseconds', () => {
    assert.equal(leaseRequest(undefined, lease(1), max), 1000);
    assert.equal(leaseRequest(undefined, lease(3600), max), 3600_000);
    assert.equal(leaseRequest(undefined, lease(2.5), max), 2500);
    assert.equal(leaseRequest(undefined, {}, max), undefined);
  });
  for (const [what, v] of [
    ['under 1s', 0.5],
    ['over the maximum', 3601],
    ['zero', 0],
    ['negative', -5],
    ['a string', '30'],
    ['missing', undefined],
  ] as const) {
    it(`refuses a ttl ${what} with InvalidParams`, () => {
      assert.throws(() => leaseRequest(undefined, lease(v), max), (e: any) => e.name !== undefined && /lease/.test(e.message));
    });
  }
  it('reads the message metadata before the request metadata', () => {
    const msg = { metadata: lease(5) } as never;
    assert.equal(leaseRequest(msg, lease(0), max), 5000);
  });
});

describe('MemoryLeaseStore', () => {
  it('renews a live lease and never revives a lapsed one', async () => {
    const s = new MemoryLeaseStore();
    await s.put({ taskId: 't', ttlMs: 1000, expiresAt: 2000 });
    assert.equal((await s.renew('t', 1500))?.expiresAt, 2500);
    assert.equal(await s.renew('t', 2500), undefined);
    assert.deepEqual((await s.expired(2500)).map((l) => l.taskId), ['t']);
    assert.deepEqual(await s.expired(2499), []);
    await s.delete('t');
    await s.delete('t');
    assert.equal(await s.get('t'), undefined);
  });
});

describe('lease extension on the wire', () => {
  const clock = new FakeClock();
  let a: TestAgent;
  before(async () => {
    a = await startTestAgent({ now: clock.now, sweepIntervalMs: 20, maxLeaseTtlMs: 60_000 });
  });
  after(() => a.close());

  for (const ttl of [0.5, 61, 'x']) {
    it(`refuses ttlSeconds ${JSON.stringify(ttl)} with -32602 and starts nothing`, async () => {
      const params = send('wait', lease(ttl));
      const before = a.seen.executed.length;
      const ans = await a.rpc.call('SendMessage', { ...params, metadata: lease(ttl) }, [LEASE_EXTENSION_URI]);
      assert.equal(ans.error?.code, -32602, JSON.stringify(ans));
      assert.equal(a.seen.executed.length, before);
      const list = await a.rpc.call('ListTasks', { contextId: params.message.contextId });
      assert.deepEqual(list.result?.tasks ?? [], []);
    });
  }

  it('answers a grant with expiresAt and activates the extension', async () => {
    const ans = await a.rpc.call('SendMessage', send('wait', lease(10)), [LEASE_EXTENSION_URI]);
    const task = ans.result.task;
    assert.equal(task.metadata[LEASE_EXTENSION_URI].expiresAt, new Date(clock.now() + 10_000).toISOString());
    assert.match(ans.headers.get('A2A-Extensions') ?? '', /lease\/v1/);
  });

  it('renews on GetTask with the extension activated, and only then', async () => {
    const ans = await a.rpc.call('SendMessage', send('wait', lease(10)), [LEASE_EXTENSION_URI]);
    const id = ans.result.task.id;
    const granted = Date.parse(ans.result.task.metadata[LEASE_EXTENSION_URI].expiresAt);
    clock.advance(4000);
    const plain = await a.rpc.call('GetTask', { id });
    assert.equal(Date.parse(plain.result.metadata[LEASE_EXTENSION_URI].expiresAt), granted, 'a plain GetTask renewed');
    const renewed = await a.rpc.call('GetTask', { id }, [LEASE_EXTENSION_URI]);
    assert.equal(Date.parse(renewed.result.metadata[LEASE_EXTENSION_URI].expiresAt), clock.now() + 10_000);
    // Renewed past the first grant: the task outlives it.
    clock.advance(8000);
    await new Promise((r) => setTimeout(r, 100)); // several sweeps
    assert.equal((await a.rpc.call('GetTask', { id })).result.status.state, 'TASK_STATE_WORKING');
    assert.ok(!a.seen.cancelled.includes(id));
  });

  it('renews over the 0.3 binding with X-A2A-Extensions', async () => {
    const ans = await a.rpc.call('SendMessage', send('wait', lease(10)), [LEASE_EXTENSION_URI]);
    const id = ans.result.task.id;
    clock.advance(3000);
    const renewed = await a.legacy.call('tasks/get', { id }, [LEASE_EXTENSION_URI]);
    assert.equal(Date.parse(renewed.result.metadata[LEASE_EXTENSION_URI].expiresAt), clock.now() + 10_000, JSON.stringify(renewed));
  });

  it('cancels a task whose lease lapsed, saying why', async () => {
    const ans = await a.rpc.call('SendMessage', send('wait', lease(2)), [LEASE_EXTENSION_URI]);
    const id = ans.result.task.id;
    clock.advance(2000);
    const task = await waitState(a.rpc, id, 'TASK_STATE_CANCELED');
    assert.ok(a.seen.cancelled.includes(id), 'the agent was not asked to cancel');
    await eventually(() => a.seen.aborted.has(id), 'the signal');
    assert.match(task.status.message.parts[0].text, /^lease expired at .* without renewal$/);
    assert.equal(await a.served.kit.leases.get(id), undefined);
  });

  it('a reply to a leased task in input-required renews it', async () => {
    const ans = await a.rpc.call('SendMessage', send('input', lease(10)), [LEASE_EXTENSION_URI]);
    const id = ans.result.task.id;
    await waitState(a.rpc, id, 'TASK_STATE_INPUT_REQUIRED');
    clock.advance(6000);
    const reply = send('blue');
    await a.rpc.call('SendMessage', { ...reply, message: { ...reply.message, taskId: id, contextId: ans.result.task.contextId } });
    await waitState(a.rpc, id, 'TASK_STATE_COMPLETED');
    assert.ok(!a.seen.cancelled.includes(id));
  });
});
