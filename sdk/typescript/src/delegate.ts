// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

import { ApiException, CustomObjectsApi, EventsV1Api, KubeConfig, V1MicroTime } from '@kubernetes/client-node';

import type { Meters } from './budget.js';
import { ClaimNotProvenError, callerRefusal, claimRefusal, type ClaimedAgent, type ClaimedDelegation } from './claim.js';
import { currentTask, type TaskScope } from './scope.js';

const GROUP = 'delegation.tether.dev';
const VERSION = 'v1alpha1';
const PLURAL = 'delegations';

/**
 * Marks a child Delegation agentkit created, with the parent's UID and the
 * child's key ("<uid>/<key>"): a retried delegate() accepts an existing
 * child only with this mark and the spec it would create.
 */
export const ANNOTATION_CHILD = 'delegation.tether.dev/agentkit-child';

/** How many hex digits of the hash of parent and key end a child's name (40 bits). */
const CHILD_HASH_LENGTH = 10;

/** A child task. */
export interface DelegateRequest {
  /**
   * Names the child among its siblings. The child's name derives from the
   * parent's and the key, so a retried delegate() finds the child it
   * created before instead of creating another.
   */
  key: string;
  /** The Agent (in the parent's namespace) that runs the child. */
  agent: string;
  /** Optionally asks for one of the agent's skills. */
  skill?: string;
  /** The message sent to start the child. */
  text: string;
  /**
   * Granted to the child. It is held from the current task's budget at
   * once, so an agent cannot grant more than it has left.
   */
  budget?: Meters;
  /** The child's wall-clock limit in milliseconds; none when unset. */
  timeoutMs?: number;
  /** Asks the child's agent to drop the task unless renewed, in milliseconds; none when unset. */
  leaseMs?: number;
}

/** How a child Delegation ended (or that it waits for input). */
export interface Outcome {
  /** The child Delegation's name. */
  name: string;
  phase: string;
  reason?: string;
  failureClass?: string;
  message?: string;
  /** The child's result text (bounded by the operator). */
  text?: string;
  /** What the child was charged. */
  spent?: Meters;
}

/** A Delegation as the API server returns it (the fields read here). */
interface DelegationObject extends ClaimedDelegation {
  metadata?: { name?: string; namespace?: string; uid?: string; deletionTimestamp?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown> & { cancel?: boolean; detach?: boolean; agentRef?: { name?: string } };
  status?: {
    phase?: string;
    taskID?: string;
    outcome?: { reason?: string; failureClass?: string; message?: string };
    result?: { text?: string };
    budget?: {
      granted?: Meters;
      reported?: Meters;
      charged?: Meters;
      spent?: Meters;
      reservations?: { meters?: Meters }[];
    };
  };
}

/**
 * The name delegate() gives the child with this key, the same as the Go
 * agentkit's ChildName: the parent's name and the key made name-safe, then
 * a hash over both. The hash keeps keys that read alike ("a_b", "a-b") and
 * different splits of parent and key apart, and long names distinct.
 */
export function childName(parent: string, key: string): string {
  let k = '';
  for (const ch of key) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch === '-') k += ch;
    else if (ch >= 'A' && ch <= 'Z') k += ch.toLowerCase();
    else k += '-';
  }
  k = k.replace(/^-+|-+$/g, '');
  // "/" is in no Delegation name, so parent and key cannot run together.
  const hash = createHash('sha256').update(`${parent}/${key}`).digest('hex').slice(0, CHILD_HASH_LENGTH);
  // Stay a valid label value (63), which tools commonly need.
  let prefix = `${parent}-${k}`;
  const limit = 63 - 1 - CHILD_HASH_LENGTH;
  if (Buffer.byteLength(prefix) > limit) prefix = Buffer.from(prefix).subarray(0, limit).toString();
  return `${prefix.replace(/[-.]+$/, '')}-${hash}`;
}

function api(kc: KubeConfig): CustomObjectsApi {
  return kc.makeApiClient(CustomObjectsApi);
}

async function getDelegation(kc: KubeConfig, namespace: string, name: string): Promise<DelegationObject> {
  return (await api(kc).getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as DelegationObject;
}

/** Reads an object; undefined when it does not exist. */
async function getOrNone<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

/**
 * Steps 0 and 2 to 4 of the claim check: reads the claimed Delegation and its
 * Agent, and returns the Delegation when the claim holds.
 */
async function prove(kc: KubeConfig, scope: TaskScope): Promise<DelegationObject> {
  const claim = scope.delegation!;
  const what = `${claim.namespace}/${claim.name}`;
  // Step 0, before anything is read: a caller who is not the operator
  // learns nothing about the Delegation and writes no Event.
  const notOperator = callerRefusal(claim, scope.operator);
  if (notOperator !== '') throw new ClaimNotProvenError(`the task is not the named Delegation's: it claims Delegation ${what}, which ${notOperator}`);
  let d: DelegationObject | undefined;
  let agent: ClaimedAgent | undefined;
  try {
    d = await getOrNone(() => getDelegation(kc, claim.namespace, claim.name));
    const agentName = d?.spec?.agentRef?.name;
    if (agentName) {
      agent = await getOrNone(
        async () =>
          (await api(kc).getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: claim.namespace, plural: 'agents', name: agentName })) as ClaimedAgent,
      );
    }
  } catch (err) {
    throw new Error(`reading the task's Delegation ${what} and its Agent: ${describe(err)}`, { cause: err });
  }
  const { reason, sentHere } = d ? claimRefusal(claim, d, agent, scope.origins) : { reason: 'it does not exist', sentHere: false };
  if (reason === '') return d!;
  const err = new ClaimNotProvenError(`the task is not the named Delegation's: it claims Delegation ${what}, which ${reason}`);
  // Only a Delegation sent to this very agent is its to report on: a
  // forwarder must not write Events into another namespace.
  if (sentHere && d) await warn(kc, scope, d, 'ClaimNotProven', err.message);
  throw err;
}

/**
 * Records a Warning Event on a Delegation when the kit records Events;
 * a failure to record is not the caller's error.
 */
async function warn(kc: KubeConfig, scope: TaskScope, d: DelegationObject, reason: string, note: string): Promise<void> {
  if (!scope.recordEvents) return;
  const namespace = d.metadata?.namespace ?? scope.delegation?.namespace ?? '';
  const name = d.metadata?.name ?? '';
  try {
    await kc.makeApiClient(EventsV1Api).createNamespacedEvent({
      namespace,
      body: {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        // Named as client-go names Events: the object's name and the time in hex.
        metadata: { name: `${name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(process.hrtime()[1] % 1_000_000)).toString(16)}`, namespace },
        eventTime: new V1MicroTime(),
        reportingController: 'tether.dev/agentkit',
        reportingInstance: hostname().slice(0, 128),
        action: 'Delegate',
        reason,
        type: 'Warning',
        note: note.slice(0, 1024),
        regarding: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Delegation', namespace, name, uid: d.metadata?.uid ?? '' },
      },
    });
  } catch (err) {
    // Events are best effort, as the Go kit's recorder: said, not thrown.
    console.warn(`${new Date().toISOString()} recording ${reason} on Delegation ${namespace}/${name} failed: ${describe(err)}`);
  }
}

/** The text of a duration as Go's time.Duration writes it (what the Go agentkit sends). */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const sec = ((ms % 60_000) / 1000).toString();
  if (h > 0) return `${h}h${m}m${sec}s`;
  if (m > 0) return `${m}m${sec}s`;
  return `${sec}s`;
}

/**
 * Compares specs as the API server stores them: defaults filled in, and
 * absent, empty and zero values alike.
 */
function sameSpec(want: Record<string, unknown>, got: Record<string, unknown> | undefined): boolean {
  const norm = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      const a = v.map(norm);
      return a.length === 0 ? undefined : a;
    }
    if (v !== null && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) {
        const n = norm((v as Record<string, unknown>)[k]);
        if (n !== undefined) o[k] = n;
      }
      return Object.keys(o).length === 0 ? undefined : o;
    }
    return v === '' || v === 0 || v === false || v === null ? undefined : v;
  };
  const withDefaults = (s: Record<string, unknown> | undefined) => ({ parentClosePolicy: 'Cancel', ...s });
  return JSON.stringify(norm(withDefaults(want))) === JSON.stringify(norm(withDefaults(got)));
}

/**
 * Creates a child Delegation of the current one and waits for it to settle:
 * Succeeded, Failed, Canceled, Detached, or waiting for input. scope is the
 * current task's (currentTask() inside a kit executor).
 */
export async function delegate(kc: KubeConfig, req: DelegateRequest, scope = currentTask(), signal?: AbortSignal): Promise<Outcome> {
  const { namespace, name } = await delegateAsync(kc, req, scope);
  return waitFor(kc, namespace, name, scope, signal ?? scope?.signal);
}

/**
 * Creates the child Delegation (or finds the one a previous call created)
 * and returns its key without waiting.
 */
export async function delegateAsync(kc: KubeConfig, req: DelegateRequest, scope = currentTask()): Promise<{ namespace: string; name: string }> {
  const claim = scope?.delegation;
  if (!scope || !claim) throw new Error('delegate: the task did not come from a Delegation');
  if (!req.key || !req.agent) throw new Error('delegate: key and agent are required');
  let parent: DelegationObject;
  try {
    parent = await prove(kc, scope);
  } catch (err) {
    throw new Error(`delegate: ${describe(err)}`, { cause: err });
  }
  const namespace = claim.namespace;
  const name = childName(claim.name, req.key);
  try {
    scope.budget.reserve(name, req.budget ?? {});
  } catch (err) {
    throw new Error(`delegate ${name}: ${describe(err)}`, { cause: err });
  }

  const spec: Record<string, unknown> = {
    agentRef: { name: req.agent },
    parentRef: { name: claim.name },
    message: { text: req.text },
  };
  if (req.skill) spec['skill'] = req.skill;
  if (req.budget && Object.keys(req.budget).length > 0) spec['budget'] = { meters: req.budget };
  if (req.timeoutMs && req.timeoutMs > 0) spec['timeout'] = goDuration(req.timeoutMs);
  if (req.leaseMs && req.leaseMs > 0) spec['lease'] = { ttl: goDuration(req.leaseMs) };
  const annotations = { [ANNOTATION_CHILD]: `${parent.metadata?.uid ?? ''}/${req.key}` };
  const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Delegation', metadata: { namespace, name, annotations }, spec };
  try {
    await createOrFind(kc, body);
  } catch (err) {
    scope.budget.release(name);
    if (err instanceof ChildNameTakenError) await warn(kc, scope, parent, 'ChildNameTaken', `child ${name}: ${err.message}`);
    throw new Error(`delegate ${name}: ${describe(err)}`, { cause: err });
  }
  return { namespace, name };
}

/**
 * Thrown by delegate() when the child's name is held by an object agentkit
 * did not create for this parent and key, or with another spec. Nothing is
 * held for it.
 */
export class ChildNameTakenError extends Error {
  override name = 'ChildNameTakenError';
}

/**
 * Creates the child, or accepts the one a previous call created: marked by
 * agentkit for the same parent and key, with the same spec. Anyone who may
 * create Delegations in the namespace could have taken the name first.
 */
async function createOrFind(
  kc: KubeConfig,
  body: { metadata: { namespace: string; name: string; annotations: Record<string, string> }; spec: Record<string, unknown> },
): Promise<void> {
  const { namespace, name } = body.metadata;
  try {
    await api(kc).createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body });
    return;
  } catch (err) {
    if (!(err instanceof ApiException) || err.code !== 409) throw err;
  }
  const existing = await getDelegation(kc, namespace, name);
  if (existing.metadata?.annotations?.[ANNOTATION_CHILD] !== body.metadata.annotations[ANNOTATION_CHILD]) {
    throw new ChildNameTakenError("the child's name is taken: it was not created by agentkit for this parent and key");
  }
  if (!sameSpec(body.spec, existing.spec)) throw new ChildNameTakenError("the child's name is taken: it exists with another spec");
}

const SETTLED = new Set(['Succeeded', 'Failed', 'Canceled', 'Detached']);

/**
 * Polls a child Delegation until it settles or waits for input. It needs no
 * state from the call that created the child: after a restart, wait again
 * by name. With the task's scope, the child's hold on the budget is
 * settled: its charge replaces the grant.
 */
export async function waitFor(kc: KubeConfig, namespace: string, name: string, scope = currentTask(), signal?: AbortSignal): Promise<Outcome> {
  // Read at once, then after 100ms, 200ms, ... up to every 2s.
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    signal?.throwIfAborted();
    const d = await getDelegation(kc, namespace, name);
    const phase = d.status?.phase ?? '';
    if (SETTLED.has(phase) || phase === 'InputRequired' || phase === 'AuthRequired') {
      if (SETTLED.has(phase)) scope?.budget.settle(name, chargeOf(d));
      return outcomeOf(name, d);
    }
    await sleep(delay, undefined, signal ? { signal } : undefined);
  }
}

function outcomeOf(name: string, d: DelegationObject): Outcome {
  const st = d.status ?? {};
  const o: Outcome = { name, phase: st.phase ?? '' };
  if (st.outcome?.reason) o.reason = st.outcome.reason;
  if (st.outcome?.failureClass) o.failureClass = st.outcome.failureClass;
  if (st.outcome?.message) o.message = st.outcome.message;
  if (st.result?.text !== undefined) o.text = st.result.text;
  if (st.budget?.spent) o.spent = st.budget.spent;
  return o;
}

const SETTLED_AT_AGENT = new Set(['Completed', 'RemoteFailed', 'RemoteRejected', 'Remote']);

function addMeters(into: Meters, from: Meters | undefined): void {
  for (const [m, n] of Object.entries(from ?? {})) into[m] = (into[m] ?? 0) + n;
}

/**
 * What the child's hold turns into: what the operator charges the parent
 * (internal/delegation.Charge), so the agent's view of its budget never
 * drifts from the parent's ledger. undefined keeps the whole hold.
 */
export function chargeOf(d: DelegationObject): Meters | undefined {
  const st = d.status ?? {};
  if (!SETTLED.has(st.phase ?? '')) return undefined;
  const grant = st.budget?.granted ?? {};
  const reason = st.outcome?.reason ?? '';
  let charge: Meters;
  if (reason === 'SendRefused') {
    charge = {};
  } else if (st.budget?.reported !== undefined && SETTLED_AT_AGENT.has(reason)) {
    // What it spent plus what its own children still hold.
    charge = {};
    addMeters(charge, st.budget.reported);
    addMeters(charge, st.budget.charged);
    for (const r of st.budget.reservations ?? []) addMeters(charge, r.meters);
  } else {
    charge = { ...grant };
  }
  const clamped: Meters = {};
  for (const [m, n] of Object.entries(charge)) {
    if (Object.hasOwn(grant, m)) clamped[m] = Math.min(Math.max(n, 0), grant[m]!);
  }
  return clamped; // empty: refunded
}

function describe(err: unknown): string {
  if (err instanceof ApiException) {
    const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
    return `HTTP ${err.code}: ${body}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export type { TaskScope };
