// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { KubeConfig } from '@kubernetes/client-node';

import { chargeOf } from '../src/delegate.js';
import { delegationOf } from '../src/claim.js';
import {
  Budget,
  ClaimNotProvenError,
  DELEGATION_METADATA_KEY,
  childName,
  claimRefusal,
  delegate,
  goDuration,
  messageIdOf,
  origin,
  originsOf,
  verifyClaim,
  type TaskScope,
} from '../src/index.js';

describe('childName', () => {
  // Produced by the Go agentkit's ChildName: both kits name a child alike,
  // so a retry from either finds the child the other created.
  for (const [parent, key, want] of [
    ['orch', 'Part 1/3', 'orch-part-1-3-7f6178279b'],
    ['orch', 'a_b', 'orch-a-b-98de87d88a'],
    ['orch', 'a-b', 'orch-a-b-7b7b0a221e'],
    ['a', 'b-c', 'a-b-c-b88f83c840'],
    ['a-b', 'c', 'a-b-c-4e84717d75'],
    ['orch', '___', 'orch-3543e658a3'],
    ['p'.repeat(60), 'worker-1', 'p'.repeat(52) + '-a4b91e3eab'],
    ['x.y', '.' + 'k'.repeat(80), 'x.y-' + 'k'.repeat(48) + '-e8e20da1c0'],
    ['orchestrate', 'child', 'orchestrate-child-2fb14e20a4'],
  ]) {
    it(`${parent} + ${JSON.stringify(key)} → ${want}`, () => {
      const got = childName(parent!, key!);
      assert.equal(got, want);
      assert.ok(got.length <= 63);
    });
  }
});

describe('goDuration', () => {
  for (const [ms, want] of [
    [500, '500ms'],
    [1500, '1.5s'],
    [30_000, '30s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
  ] as const) {
    it(`${ms}ms → ${want}`, () => assert.equal(goDuration(ms), want));
  }
});

describe('origin', () => {
  it('writes scheme and host in lower case and the port always', () => {
    assert.equal(origin('HTTP://Orch.Test:8080/rest'), 'http://orch.test:8080');
    assert.equal(origin('https://ORCH.example/'), 'https://orch.example:443');
    assert.equal(origin('http://[::1]/a'), 'http://[::1]:80');
  });
  it('refuses what is not http(s)', () => {
    assert.throws(() => origin('orch.test:8080'), /unsupported scheme/);
    assert.throws(() => origin('not a url'), /invalid URL/);
  });
});

describe('the claim check', () => {
  // The table of the Go agentkit's TestClaimCheck.
  const uid = 'x-uid';
  const task = 'task-1';
  const first = messageIdOf(uid);
  const claim = (taskId: string, messageId = '') => ({ namespace: 'ns', name: 'x', taskId, messageId });
  const running = (mut: (d: any) => void = () => {}) => {
    const d: any = { metadata: { uid }, spec: { agentRef: { name: 'a' } }, status: { phase: 'Running', taskID: task } };
    mut(d);
    return d;
  };
  const at = (endpoint: string) => ({ metadata: { name: 'a' }, status: { endpoint } });
  const here = at('HTTP://Orch.Test:8080/rest');
  const mine = originsOf(['http://orch.test:8080', 'https://orch.example']);
  const cases: [string, ReturnType<typeof claim>, any, any, string[], string, boolean][] = [
    ['recorded task, sent here', claim(task, 'anything'), running(), here, mine, '', true],
    ['not yet recorded, first message derived from the UID', claim('t-2', first), running((d) => ((d.status.taskID = ''), (d.status.phase = 'Pending'))), here, mine, '', true],
    ['https default port written out', claim(task), running(), at('https://ORCH.example/'), mine, '', true],
    ['sent to another agent', claim(task), running(), at('http://evil.test:8080/'), mine, 'was sent to another agent', false],
    ['another port of the same host', claim(task), running(), at('http://orch.test:9090/'), mine, 'was sent to another agent', false],
    ['http instead of https', claim(task), running(), at('http://orch.example/'), mine, 'was sent to another agent', false],
    ['a gRPC endpoint', claim(task), running(), at('orch.test:8080'), mine, 'unsupported scheme', false],
    ['no Agent', claim(task), running(), undefined, mine, 'has no Agent', false],
    ['an Agent without endpoint', claim(task), running(), at(''), mine, 'no endpoint', false],
    ['an agent that knows no origin of its own', claim(task), running(), here, [], 'knows none of its own origins', false],
    ['another task than the recorded one', claim('forged', first), running(), here, mine, 'was sent as task "task-1"', true],
    ['not yet recorded, another first message', claim('t-2', 'forged'), running((d) => (d.status.taskID = '')), here, mine, 'did not send message "forged"', true],
    ['not yet recorded, no first message', claim('t-2'), running((d) => (d.status.taskID = '')), here, mine, 'did not send message', true],
    ['settled', claim(task), running((d) => (d.status.phase = 'Succeeded')), here, mine, 'no longer runs (Succeeded)', true],
    ['detached', claim(task), running((d) => (d.status.phase = 'Detached')), here, mine, 'no longer runs', true],
    ['cancel requested', claim(task), running((d) => (d.spec.cancel = true)), here, mine, 'was cancelled', true],
    ['detach requested', claim(task), running((d) => (d.spec.detach = true)), here, mine, 'was detached', true],
    ['being deleted', claim(task), running((d) => (d.metadata.deletionTimestamp = '2026-12-01T00:00:00Z')), here, mine, 'is being deleted', true],
    ['settled and sent elsewhere: nothing to report on', claim(task), running((d) => (d.status.phase = 'Failed')), at('http://evil.test/'), mine, 'no longer runs', false],
    ['waiting for input still runs', claim(task), running((d) => (d.status.phase = 'InputRequired')), here, mine, '', true],
  ];
  for (const [name, cl, d, agent, origins, refusal, sentHere] of cases) {
    it(name, () => {
      const got = claimRefusal(cl, d, agent, origins);
      if (refusal === '') assert.equal(got.reason, '');
      else assert.ok(got.reason.includes(refusal), `${JSON.stringify(got.reason)} does not say ${JSON.stringify(refusal)}`);
      assert.equal(got.sentHere, sentHere);
      if (refusal === '') verifyClaim(cl, d, agent, origins);
      else assert.throws(() => verifyClaim(cl, d, agent, origins), ClaimNotProvenError);
    });
  }
  it('a Delegation that does not exist proves nothing', () => {
    assert.throws(() => verifyClaim(claim(task), undefined, here, mine), /does not exist/);
  });
});

describe('delegationOf', () => {
  const msg = (messageId: string, meta: Record<string, unknown>) => ({ messageId, metadata: meta });
  const rc = (message: unknown, history?: unknown[]) =>
    ({ taskId: 't1', contextId: 'c1', userMessage: message, request: { metadata: {} }, task: history ? { history } : undefined }) as never;
  const claimed = { [DELEGATION_METADATA_KEY]: 'ns/orch' };
  it('reads namespace/name and the ids that can prove it', () => {
    assert.deepEqual(delegationOf(rc(msg('m-now', claimed))), { namespace: 'ns', name: 'orch', messageId: 'm-now', taskId: 't1' });
  });
  it('reads the claim from the message itself: a reply without it has none', () => {
    const firstMsg = msg('tether-uid', claimed);
    assert.equal(delegationOf(rc(msg('reply', {}), [firstMsg])), undefined);
    assert.deepEqual(delegationOf(rc(msg('reply', claimed), [firstMsg])), { namespace: 'ns', name: 'orch', messageId: 'tether-uid', taskId: 't1' }, 'the first message id still comes from the history');
  });
  for (const v of ['orch', '/orch', 'ns/', 7]) {
    it(`ignores ${JSON.stringify(v)}`, () => assert.equal(delegationOf(rc(msg('m', { [DELEGATION_METADATA_KEY]: v }))), undefined));
  }
});

describe('chargeOf', () => {
  const settled = (reason: string, budget: object) => ({ status: { phase: 'Succeeded', outcome: { reason }, budget } });
  it('is the reported spend plus what its own children hold, within the grant', () => {
    assert.deepEqual(chargeOf(settled('Completed', { granted: { tokens: 100 }, reported: { tokens: 30 }, charged: { tokens: 5 }, reservations: [{ meters: { tokens: 10 } }] })), { tokens: 45 });
    assert.deepEqual(chargeOf(settled('Completed', { granted: { tokens: 100 }, reported: { tokens: 300, other: 1 } })), { tokens: 100 });
  });
  it('keeps the whole grant when the child ended without a report', () => {
    assert.deepEqual(chargeOf({ status: { phase: 'Canceled', outcome: { reason: 'ParentDeleted' }, budget: { granted: { tokens: 100 }, reported: { tokens: 3 } } } }), { tokens: 100 });
  });
  it('refunds a refused send', () => {
    assert.deepEqual(chargeOf({ status: { phase: 'Failed', outcome: { reason: 'SendRefused' }, budget: { granted: { tokens: 100 } } } }), {});
  });
  it('is undefined while the child runs', () => {
    assert.equal(chargeOf({ status: { phase: 'Running' } }), undefined);
  });
});

describe('delegate', () => {
  const scope = (delegation?: TaskScope['delegation']): TaskScope => ({
    taskId: 't',
    contextId: 'c',
    budget: Budget.unlimited(),
    origins: [],
    signal: new AbortController().signal,
    ...(delegation ? { delegation } : {}),
  });
  it('refuses outside a task that came from a Delegation', async () => {
    await assert.rejects(delegate(new KubeConfig(), { key: 'k', agent: 'a', text: 'x' }, scope()), /did not come from a Delegation/);
    await assert.rejects(delegate(new KubeConfig(), { key: 'k', agent: 'a', text: 'x' }, undefined), /did not come from a Delegation/);
  });
  it('needs a key and an agent', async () => {
    const s = scope({ namespace: 'ns', name: 'p', messageId: 'm', taskId: 't' });
    await assert.rejects(delegate(new KubeConfig(), { key: '', agent: 'a', text: 'x' }, s), /key and agent are required/);
  });
});
