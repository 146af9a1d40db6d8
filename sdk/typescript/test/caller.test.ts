// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// The HTTP answers of tokenReview and the claim's step 0; the Go tests run
// TokenReview itself on a real API server.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import type { V1TokenReview } from '@kubernetes/client-node';

import { JSONRPC_PATH, callerRefusal, type TokenReviewer } from '../src/index.js';
import { Client, eventually, send, startTestAgent, type TestAgent } from './helpers.js';

const operator = 'system:serviceaccount:tether-system:tether';

describe('tokenReview', () => {
  let reviews = 0;
  // "good" is the operator for the asked audience, "other-aud" is bound
  // elsewhere, "broken" fails the review, anything else is refused.
  const reviewer: TokenReviewer = async (tr: V1TokenReview) => {
    reviews++;
    const token = tr.spec.token;
    if (token === 'broken') throw new Error('connection refused');
    if (token === 'good') return { ...tr, status: { authenticated: true, audiences: tr.spec.audiences, user: { username: operator, uid: 'u-1' } } };
    if (token === 'other-aud') return { ...tr, status: { authenticated: true, audiences: ['elsewhere'], user: { username: operator } } };
    return { ...tr, status: { authenticated: false, error: 'invalid bearer token' } };
  };
  let agent: TestAgent;
  before(async () => {
    agent = await startTestAgent({ tokenReview: { audience: 'agent', reviewer }, operator });
  });
  after(() => agent.close());
  const as = (token?: string) =>
    new Client(agent.served.url + JSONRPC_PATH, { 'A2A-Version': '1.0', ...(token ? { Authorization: `Bearer ${token}` } : {}) }, 'A2A-Extensions');
  const post = (headers: Record<string, string>) =>
    fetch(agent.served.url + JSONRPC_PATH, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: '{}' });

  it('refuses a request without a token that passes TokenReview for its audience', async () => {
    for (const [auth, status] of [
      [undefined, 401],
      ['Basic Zm9vOmJhcg==', 401],
      ['Bearer nope', 401],
      ['Bearer other-aud', 401],
      ['Bearer broken', 503],
    ] as const) {
      const res = await post(auth ? { Authorization: auth } : {});
      assert.equal(res.status, status, String(auth));
      if (status === 401) assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/, String(auth));
    }
    assert.match(await (await post({ Authorization: 'Bearer other-aud' })).text(), /not bound to audience "agent"/);
  });

  it('leaves the card unauthenticated', async () => {
    // (The test agent's card is incomplete, so its status is not 200.)
    const res = await fetch(agent.served.url + '/.well-known/agent-card.json');
    assert.notEqual(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), null);
  });

  it('gives the executor the caller, reviewing a token once', async () => {
    const before = reviews;
    const c = as('good');
    for (let i = 0; i < 3; i++) {
      const a = await c.call('SendMessage', send('hello'));
      assert.equal(a.error, undefined);
      const id = a.result.task.id as string;
      await eventually(() => agent.seen.scopes.has(id), 'the task ran');
      assert.equal(agent.seen.scopes.get(id)?.caller?.username, operator);
      assert.equal(agent.seen.scopes.get(id)?.operator, operator);
    }
    assert.equal(reviews, before + 1, 'one review, then the cached answer');
  });
});

describe('callerRefusal (step 0 of the claim check)', () => {
  const claim = { namespace: 'team', name: 'orch', messageId: 'tether-uid', taskId: 't' };
  it('lets only the operator make a claim when the kit knows the operator', () => {
    assert.equal(callerRefusal({ ...claim, caller: operator }, operator), '');
    assert.match(callerRefusal({ ...claim, caller: 'system:serviceaccount:team:intruder' }, operator), /came from system:serviceaccount:team:intruder/);
    assert.match(callerRefusal(claim, operator), /came from an unauthenticated caller/);
    assert.equal(callerRefusal(claim, undefined), '', 'without the operator option, as before');
  });
});
