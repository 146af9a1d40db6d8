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
  delegate,
  messageIdOf,
  verifyClaim,
  type TaskScope,
} from '../src/index.js';

describe('childName', () => {
  // Produced by the Go agentkit's ChildName: both kits name a child alike,
  // so a retry from either finds the child the other created.
  for (const [parent, key, want] of [
    ['parent', 'Research Step 1', 'parent-research-step-1'],
    ['p', '--x--', 'p-x'],
    ['orchestrate', 'child', 'orchestrate-child'],
    ['a-very-long-parent-name-that-goes-on-and-on-and-on', 'and-a-long-key-too', 'a-very-long-parent-name-that-goes-on-and-on-and-on-and-77e00be9'],
    ['p', 'é/ü', 'p-'],
    ['abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz', '--.--ab', 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz-ab'],
  ]) {
    it(`${parent} + ${JSON.stringify(key)} → ${want}`, () => assert.equal(childName(parent!, key!), want));
  }
});

describe('verifyClaim', () => {
  const claim = { namespace: 'team-a', name: 'orch', messageId: 'tether-uid-1', taskId: 'task-1' };
  it('holds when the first message id derives from the UID', () => {
    verifyClaim(claim, { metadata: { uid: 'uid-1' } });
    assert.equal(messageIdOf('uid-1'), 'tether-uid-1');
    assert.equal(messageIdOf('uid-1', 2), 'tether-uid-1-reply-2');
  });
  it('holds when the task id is the one in status', () => {
    verifyClaim({ ...claim, messageId: 'other' }, { metadata: { uid: 'uid-9' }, status: { taskID: 'task-1' } });
  });
  it('fails for a task that merely names the Delegation', () => {
    assert.throws(() => verifyClaim({ ...claim, messageId: 'tether-uid-2', taskId: 'task-2' }, { metadata: { uid: 'uid-1' }, status: { taskID: 'task-1' } }), ClaimNotProvenError);
    assert.throws(() => verifyClaim({ ...claim, messageId: '', taskId: '' }, { metadata: { uid: '' }, status: {} }), ClaimNotProvenError);
  });
});

describe('delegationOf', () => {
  const rc = (meta: Record<string, unknown>, history?: unknown[]) =>
    ({
      taskId: 't1',
      contextId: 'c1',
      userMessage: { messageId: 'm-now', metadata: meta },
      request: { metadata: {} },
      task: history ? { history } : undefined,
    }) as never;
  it('reads namespace/name and the ids that can prove it', () => {
    assert.deepEqual(delegationOf(rc({ [DELEGATION_METADATA_KEY]: 'ns/orch' })), { namespace: 'ns', name: 'orch', messageId: 'm-now', taskId: 't1' });
  });
  it('takes the claim and the message id from the first message on a reply', () => {
    const first = { messageId: 'tether-uid', metadata: { [DELEGATION_METADATA_KEY]: 'ns/orch' } };
    assert.deepEqual(delegationOf(rc({}, [first])), { namespace: 'ns', name: 'orch', messageId: 'tether-uid', taskId: 't1' });
  });
  for (const v of ['orch', '/orch', 'ns/', 7]) {
    it(`ignores ${JSON.stringify(v)}`, () => assert.equal(delegationOf(rc({ [DELEGATION_METADATA_KEY]: v })), undefined));
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
