// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// Signed agent cards (A2A 1.0 §8.4): the kit writes exactly the signature the
// Go side writes (the shared vector in internal/a2a/testdata/cardsig, which
// the Go tests check the same way), verifies the Go side's, and serves its
// card signed.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

import { generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';
import { base64url, exportJWK, generateKeyPair, type JWK } from 'jose';

import { CardSignatureError, REST_PATH, cardPayload, loadCardSigningKey, publicKeySet, signCard, verifyCard } from '../src/index.js';
import { startTestAgent } from './helpers.js';

const vector = JSON.parse(readFileSync(new URL('../../../../internal/a2a/testdata/cardsig/vector.json', import.meta.url), 'utf8'));

async function newKey(kid: string, alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg };
}

describe('the shared card signature vector', () => {
  it('has the canonical payload the Go side computes', () => {
    assert.equal(cardPayload(vector.card), vector.payload);
  });

  it('is signed byte for byte as the Go agentkit signs it', async () => {
    const signed = await signCard(vector.card, vector.privateKey);
    assert.deepEqual(signed.signatures, vector.signedCard.signatures);
    const header = JSON.parse(new TextDecoder().decode(base64url.decode(signed.signatures[0]!.protected)));
    assert.deepEqual(header, { alg: 'EdDSA', kid: 'vector-ed25519', typ: 'JOSE' });
  });

  it('verifies the card the Go side signed', async () => {
    assert.deepEqual(await verifyCard(vector.signedCard, vector.keySet), { keyId: 'vector-ed25519', algorithm: 'EdDSA' });
  });

  it('is read alike by the A2A JS SDK: each verifies what the other signed', async () => {
    const signed = await signCard(vector.card, vector.privateKey);
    await verifyAgentCardSignature(async () => vector.keySet.keys[0])(signed as never);
    const bySDK = await generateAgentCardSignature(vector.privateKey, { alg: 'EdDSA', kid: 'vector-ed25519', typ: 'JOSE' })(vector.card);
    assert.deepEqual(await verifyCard(bySDK, vector.keySet), { keyId: 'vector-ed25519', algorithm: 'EdDSA' });
  });
});

// A2A 1.0 §8.4.1's worked example, read as the A2A SDKs read it: every
// empty value is left out (the spec's text keeps the REQUIRED empty
// description and skills), false is kept, keys in RFC 8785 order.
it('the payload of the spec worked example', () => {
  const card = {
    name: 'Example Agent',
    description: '',
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    skills: [],
    signatures: [{ protected: 'x', signature: 'y' }],
  };
  assert.equal(cardPayload(card), '{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}');
});

describe('verifyCard', () => {
  const card = { name: 'signed', version: '1', capabilities: { streaming: false, extensions: [] }, iconUrl: '', score: 1.5 };

  it('accepts a signature by any key of the set, and ignores what is not signed', async () => {
    const key = await newKey('kit-1');
    const signed = await signCard(card, key);
    const keys = publicKeySet(await newKey('unrelated'), key);
    assert.ok(keys.keys.every((k) => !('d' in k)), 'the public key set holds no private part');
    assert.deepEqual(await verifyCard(signed, keys), { keyId: 'kit-1', algorithm: 'ES256' });
    // Key order, whitespace and empty values are not part of what is signed.
    const reordered = JSON.parse(JSON.stringify({ documentationUrl: '', ...signed, provider: null }, null, 3));
    assert.deepEqual(await verifyCard(reordered, keys), { keyId: 'kit-1', algorithm: 'ES256' });
  });

  it('refuses a changed card, an unknown key, an unsigned card', async () => {
    const key = await newKey('kit-1');
    const signed = await signCard(card, key);
    const keys = publicKeySet(key);
    const refused = async (c: object, k = keys) => {
      const err = await verifyCard(c, k).then(
        () => assert.fail('verified'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof CardSignatureError, String(err));
      return err.message;
    };
    assert.match(await refused({ ...signed, name: 'signeD' }), /the signature by key "kit-1" \(ES256\) does not match the card/);
    assert.match(await refused({ ...signed, capabilities: { streaming: true } }), /does not match the card/);
    assert.match(await refused(signed, publicKeySet(await newKey('other'))), /key "kit-1" is not in the key set/);
    assert.match(await refused(card), /the card is not signed/);
    assert.match(await refused(signed, {} as never), /not a JSON Web Key Set/);
    // A key of the set that names another algorithm is not used.
    assert.match(await refused(signed, { keys: [{ ...keys.keys[0]!, alg: 'ES384' }] }), /does not match the card/);
  });

  it('accepts either of two signatures', async () => {
    const [a, b] = [await newKey('a'), await newKey('b', 'EdDSA')];
    const twice = await signCard(await signCard(card, a), b);
    assert.equal(twice.signatures.length, 2);
    assert.deepEqual(await verifyCard(twice, publicKeySet(b)), { keyId: 'b', algorithm: 'EdDSA' });
    assert.deepEqual(await verifyCard(twice, publicKeySet(a)), { keyId: 'a', algorithm: 'ES256' });
  });
});

describe('signing keys', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentkit-cardsign-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are private JWKs that name kid and alg', async () => {
    const key = await newKey('kit-1');
    const file = join(dir, 'key.json');
    writeFileSync(file, JSON.stringify(key));
    assert.deepEqual(loadCardSigningKey(file), key);
    for (const [name, bad] of Object.entries({
      public: publicKeySet(key).keys[0],
      'no kid': { ...key, kid: undefined },
      'no alg': { ...key, alg: undefined },
      HMAC: { kty: 'oct', k: 'MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY', kid: 'h', alg: 'HS256' },
    })) {
      writeFileSync(file, JSON.stringify(bad));
      assert.throws(() => loadCardSigningKey(file), /card signing key/, name);
      await assert.rejects(signCard({ name: 'x' }, bad as JWK), /card signing key/, name);
    }
    writeFileSync(file, 'not json');
    assert.throws(() => loadCardSigningKey(file), /is not a JSON Web Key/);
  });
});

describe('serve with cardSigningKey', () => {
  it('serves a signed card over HTTP+JSON only, as asked', async (t) => {
    const key = await newKey('served');
    const agent = await startTestAgent({ cardSigningKey: key, bindings: ['rest'] });
    t.after(() => agent.close());
    const res = await fetch(agent.served.url + '/.well-known/agent-card.json', { headers: { 'A2A-Version': '1.0' } });
    assert.equal(res.status, 200);
    const card = (await res.json()) as { supportedInterfaces: unknown };
    assert.deepEqual(card.supportedInterfaces, [
      { url: agent.served.url + REST_PATH, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    ]);
    assert.deepEqual(await verifyCard(card, publicKeySet(key)), { keyId: 'served', algorithm: 'ES256' });

    // The REST binding answers; the JSON-RPC ones are not served.
    const missing = await fetch(agent.served.url + REST_PATH + '/tasks/no-such-task', { headers: { 'A2A-Version': '1.0' } });
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /TASK_NOT_FOUND/);
    const rpc = await agent.rpc.call('GetTask', { id: 'no-such-task' }).catch((e: unknown) => e);
    assert.ok(rpc instanceof Error, 'the JSON-RPC binding is not served');
  });

  it('refuses a bad key or binding before serving', async () => {
    await assert.rejects(startTestAgent({ cardSigningKey: { kty: 'EC', kid: 'k' } as JWK }), /card signing key/);
    await assert.rejects(startTestAgent({ bindings: ['grpc' as never] }), /bindings must name/);
    await assert.rejects(startTestAgent({ bindings: [] }), /bindings must name/);
  });
});
