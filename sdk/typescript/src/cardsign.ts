// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// Signed agent cards (A2A 1.0 §8.4), as the operator checks them under an
// Agent's spec.cardSignature and as the Go agentkit writes them. A card's
// `signatures` are JWS (RFC 7515) objects {protected, signature} with a
// detached payload: the card's JSON without `signatures`, with empty values
// left out (empty strings, nulls, and arrays and objects that are empty
// once their own empty values are gone, and an extension's `required:
// false`, a field without presence in A2A's proto; other false and 0 values
// are kept, as the A2A SDKs do), in RFC 8785 canonical form. The protected header is
// {alg, kid, typ: "JOSE"}. Canonicalisation is `canonicalize`; the JWS is `jose`.

import { readFileSync } from 'node:fs';

import canonicalize from 'canonicalize';
import { FlattenedSign, base64url, decodeProtectedHeader, flattenedVerify, importJWK, type JSONWebKeySet, type JWK } from 'jose';

/** The JWS algorithms a card may be signed with: asymmetric ones only (a shared secret would let every verifier sign). */
export const CARD_SIGNATURE_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];

/** The most signatures of one card that are tried. */
export const MAX_CARD_SIGNATURES = 8;

/** One entry of a card's `signatures`. */
export interface CardSignatureEntry {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** Why no signature of a card verified. */
export class CardSignatureError extends Error {
  override readonly name = 'CardSignatureError';
}

/** The signature that verified. */
export interface VerifiedCardSignature {
  keyId: string;
  algorithm: string;
}

/** What a signature of the card covers: the card without `signatures`, empty values left out, in RFC 8785 form. */
export function cardPayload(card: object): string {
  // The card as it is served: what JSON.stringify writes (undefined left out).
  const wire = JSON.parse(JSON.stringify(card)) as Record<string, unknown>;
  delete wire['signatures'];
  const extensions = (wire['capabilities'] as { extensions?: Array<{ required?: unknown }> } | undefined)?.extensions;
  for (const e of Array.isArray(extensions) ? extensions : []) if (e?.required === false) delete e.required;
  return canonicalize(withoutEmpty(wire) ?? {}) as string;
}

/**
 * Returns the card with a signature by key (a private JWK with kid and alg)
 * added to its signatures.
 */
export async function signCard<T extends object>(card: T, key: JWK): Promise<T & { signatures: CardSignatureEntry[] }> {
  const { kid, alg } = checkSigningKey(key, 'the card signing key');
  const jws = await new FlattenedSign(new TextEncoder().encode(cardPayload(card)))
    .setProtectedHeader({ alg, kid, typ: 'JOSE' })
    .sign(await importJWK(key, alg));
  const old = (card as { signatures?: CardSignatureEntry[] }).signatures ?? [];
  return { ...card, signatures: [...old, { protected: jws.protected as string, signature: jws.signature }] };
}

/**
 * Checks the card's signatures against keys (a JSON Web Key Set). One
 * signature that verifies with a key of the set is enough; a key is found
 * by its key id, and a key that names an algorithm is used only with it.
 * Throws CardSignatureError saying why none verified.
 */
export async function verifyCard(card: object, keys: JSONWebKeySet): Promise<VerifiedCardSignature> {
  if (!Array.isArray(keys?.keys)) throw new CardSignatureError('the key set is not a JSON Web Key Set ({"keys": [...]})');
  const signatures = (card as { signatures?: unknown }).signatures;
  if (!Array.isArray(signatures) || signatures.length === 0) throw new CardSignatureError('the card is not signed');
  // The payload is detached: the verifier puts it back, base64url-encoded.
  const payload = base64url.encode(cardPayload(card));
  const errs: string[] = [];
  for (const [i, s] of signatures.entries()) {
    if (i === MAX_CARD_SIGNATURES) {
      errs.push(`${signatures.length - i} more signatures not tried`);
      break;
    }
    try {
      return await verifyOne(s as CardSignatureEntry, payload, keys);
    } catch (err) {
      errs.push(err instanceof Error ? err.message : String(err));
    }
  }
  throw new CardSignatureError(`no signature verified: ${errs.join('; ')}`);
}

async function verifyOne(s: CardSignatureEntry, payload: string, keys: JSONWebKeySet): Promise<VerifiedCardSignature> {
  if (typeof s?.protected !== 'string' || typeof s?.signature !== 'string' || !s.protected || !s.signature) {
    throw new Error('a signature without protected header or signature value');
  }
  let kid: string | undefined;
  let alg: string | undefined;
  try {
    ({ kid, alg } = decodeProtectedHeader({ protected: s.protected }));
  } catch (err) {
    throw new Error(`a signature that cannot be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!kid) throw new Error('a signature whose protected header has no key id (kid)');
  if (!alg || !CARD_SIGNATURE_ALGORITHMS.includes(alg)) throw new Error(`key "${kid}": algorithm ${alg ?? '(none)'} is not one cards are signed with`);
  if (!keys.keys.some((k) => k.kid === kid)) throw new Error(`key "${kid}" is not in the key set`);
  const candidates = keys.keys.filter((k) => k.kid === kid && (!k.alg || k.alg === alg) && (!k.use || k.use === 'sig'));
  for (const k of candidates) {
    try {
      await flattenedVerify({ protected: s.protected, signature: s.signature, payload }, await importJWK(publicPart(k), alg), {
        algorithms: CARD_SIGNATURE_ALGORITHMS,
      });
      return { keyId: kid, algorithm: alg };
    } catch {
      // another key of the same id may match
    }
  }
  throw new Error(`the signature by key "${kid}" (${alg}) does not match the card`);
}

/**
 * Reads a private JSON Web Key (with kid and alg) from a file, for example
 * a key of a Secret mounted into the agent's pod.
 */
export function loadCardSigningKey(path: string): JWK {
  let key: JWK;
  try {
    key = JSON.parse(readFileSync(path, 'utf8')) as JWK;
  } catch (err) {
    throw new Error(`the card signing key ${path} is not a JSON Web Key: ${err instanceof Error ? err.message : String(err)}`);
  }
  checkSigningKey(key, `the card signing key ${path}`);
  return key;
}

/** The JSON Web Key Set an Agent's spec.cardSignature.keys names for cards signed with these keys (public parts only). */
export function publicKeySet(...keys: JWK[]): JSONWebKeySet {
  return { keys: keys.map((k) => ({ ...publicPart(k), use: 'sig' })) };
}

function checkSigningKey(key: JWK, what: string): { kid: string; alg: string } {
  if (!key || typeof key !== 'object' || !key.kid || !('d' in key) || !key.d) {
    throw new Error(`${what} must be a private JSON Web Key with a key id (kid)`);
  }
  if (!key.alg) throw new Error(`${what} ("${key.kid}") names no algorithm (alg)`);
  if (!CARD_SIGNATURE_ALGORITHMS.includes(key.alg)) {
    throw new Error(`${what} ("${key.kid}") uses ${key.alg}; cards are signed with one of ${CARD_SIGNATURE_ALGORITHMS.join(', ')}`);
  }
  return { kid: key.kid, alg: key.alg };
}

// The private members of the JWK key types (EC, OKP, RSA).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function publicPart(key: JWK): JWK {
  return Object.fromEntries(Object.entries(key).filter(([name]) => !PRIVATE_MEMBERS.includes(name))) as JWK;
}

/** Leaves out empty strings, nulls, and arrays and objects that are empty once their own empty values are gone. */
function withoutEmpty(v: unknown): unknown {
  if (v === null || v === undefined || v === '') return undefined;
  if (Array.isArray(v)) {
    const out = v.map(withoutEmpty).filter((e) => e !== undefined);
    return out.length > 0 ? out : undefined;
  }
  if (typeof v === 'object') {
    const out = Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .map(([k, e]) => [k, withoutEmpty(e)] as const)
        .filter(([, e]) => e !== undefined),
    );
    return Object.keys(out).length > 0 ? out : undefined;
  }
  return v;
}
