// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { ApiException, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

import type { Meters } from './budget.js';
import { verifyClaim } from './claim.js';
import { currentTask, type TaskScope } from './scope.js';

const GROUP = 'delegation.tether.dev';
const VERSION = 'v1alpha1';
const PLURAL = 'delegations';

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
interface DelegationObject {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { parentRef?: { name?: string }; agentRef?: { name?: string } };
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

/** The name delegate() gives the child with this key (the Go agentkit's ChildName). */
export function childName(parent: string, key: string): string {
  let k = '';
  for (const ch of key) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch === '-') k += ch;
    else if (ch >= 'A' && ch <= 'Z') k += ch.toLowerCase();
    else k += '-';
  }
  k = k.replace(/^-+|-+$/g, '');
  let name = `${parent}-${k}`;
  // Stay a valid label value (63), which tools commonly need; a hash keeps
  // long names distinct.
  if (Buffer.byteLength(name) > 63) {
    const sum = createHash('sha256').update(`${parent}/${key}`).digest('hex');
    name = `${Buffer.from(name).subarray(0, 54).toString().replace(/[-.]+$/, '')}-${sum.slice(0, 8)}`;
  }
  return name;
}

function api(kc: KubeConfig): CustomObjectsApi {
  return kc.makeApiClient(CustomObjectsApi);
}

async function getDelegation(kc: KubeConfig, namespace: string, name: string): Promise<DelegationObject> {
  return (await api(kc).getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as DelegationObject;
}

/** Go-style duration text the API accepts for metav1.Duration. */
function duration(ms: number): string {
  return `${ms / 1000}s`;
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
    parent = await getDelegation(kc, claim.namespace, claim.name);
  } catch (err) {
    throw new Error(`delegate: reading the task's Delegation ${claim.namespace}/${claim.name}: ${describe(err)}`);
  }
  try {
    verifyClaim(claim, parent);
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
  if (req.timeoutMs && req.timeoutMs > 0) spec['timeout'] = duration(req.timeoutMs);
  if (req.leaseMs && req.leaseMs > 0) spec['lease'] = { ttl: duration(req.leaseMs) };
  const body = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Delegation', metadata: { namespace, name }, spec };
  try {
    await createOrFind(kc, body, claim.name);
  } catch (err) {
    scope.budget.release(name);
    throw new Error(`delegate ${name}: ${describe(err)}`, { cause: err });
  }
  return { namespace, name };
}

/** Creates the child, or accepts the one a previous call created. */
async function createOrFind(kc: KubeConfig, body: { metadata: { namespace: string; name: string } }, parent: string): Promise<void> {
  const { namespace, name } = body.metadata;
  try {
    await api(kc).createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body });
    return;
  } catch (err) {
    if (!(err instanceof ApiException) || err.code !== 409) throw err;
  }
  const existing = await getDelegation(kc, namespace, name);
  if (existing.spec?.parentRef?.name !== parent) throw new Error('it exists and belongs to another parent');
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
