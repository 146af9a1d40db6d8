// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

// The claim check, step by step as docs/security.md specifies it and the Go
// agentkit implements it: a task's claim to speak for a Delegation is
// honoured only by the agent the Delegation was sent to, only for the task
// that was sent, and only while the Delegation runs.

import type { RequestContext } from '@a2a-js/sdk/server';

import { DELEGATION_METADATA_KEY } from './constants.js';
import { extensionData } from './meta.js';
import type { DelegationClaim } from './scope.js';

/**
 * Step 1: reads "namespace/name" from the message being executed (or its
 * request). Earlier messages of the task are not consulted: the operator
 * puts the claim on every message it sends, and a claim read from the
 * history would let a reply from anyone speak for the task's first sender.
 */
export function delegationOf(rc: RequestContext): DelegationClaim | undefined {
  const { found, value } = extensionData(rc.userMessage, rc.request.metadata, DELEGATION_METADATA_KEY);
  if (!found || typeof value !== 'string') return undefined;
  const slash = value.indexOf('/');
  const namespace = value.slice(0, slash);
  const name = value.slice(slash + 1);
  if (slash < 0 || namespace === '' || name === '') return undefined;
  // The first message: of the task's history, or this one when it starts the task.
  const first = rc.task?.history?.[0] ?? rc.userMessage;
  return { namespace, name, messageId: first?.messageId ?? '', taskId: rc.taskId };
}

/** The Delegation fields the claim is checked against. */
export interface ClaimedDelegation {
  metadata?: { uid?: string; deletionTimestamp?: string };
  spec?: { cancel?: boolean; detach?: boolean; agentRef?: { name?: string } };
  status?: { phase?: string; taskID?: string };
}

/** The Agent fields the claim is checked against. */
export interface ClaimedAgent {
  metadata?: { name?: string };
  status?: { endpoint?: string };
}

/** The id of a Delegation's first message, as the operator derives it from the UID. */
export function messageIdOf(uid: string, reply = -1): string {
  return reply < 0 ? `tether-${uid}` : `tether-${uid}-reply-${reply}`;
}

/**
 * Thrown by delegate() when the task's claim does not hold: the named
 * Delegation was not sent to this agent, does not run any more, or this
 * task is not the one sent for it. Nothing is created then, so an agent
 * that received a claim cannot make another agent spend the Delegation's
 * budget or use its namespace's Agents by forwarding it.
 */
export class ClaimNotProvenError extends Error {
  override name = 'ClaimNotProvenError';
}

/**
 * Normalises an http(s) URL to scheme://host:port, scheme and host in lower
 * case and the scheme's default port written out: the form the claim check
 * compares.
 */
export function origin(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (err) {
    throw new Error(`invalid URL: ${err instanceof Error ? err.message : String(err)}`);
  }
  const scheme = u.protocol.replace(/:$/, '').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported scheme ${JSON.stringify(scheme)} (http or https)`);
  const host = u.hostname.toLowerCase();
  if (host === '') throw new Error('the URL has no host');
  const port = u.port || (scheme === 'https' ? '443' : '80');
  return `${scheme}://${host}:${port}`;
}

/** The origins of urls, skipping what is not an http(s) URL. */
export function originsOf(urls: Iterable<string>): string[] {
  const out: string[] = [];
  for (const u of urls) {
    try {
      const o = origin(u);
      if (!out.includes(o)) out.push(o);
    } catch {
      // not an http(s) URL: it cannot match an endpoint
    }
  }
  return out;
}

const SETTLED = new Set(['Succeeded', 'Failed', 'Canceled', 'Detached']);

/**
 * Step 4: why the Agent is not this agent ("" when it is): the origin of
 * the endpoint the operator sends to must be one of the agent's own.
 */
function sentTo(agent: ClaimedAgent | undefined, origins: readonly string[]): string {
  const name = JSON.stringify(agent?.metadata?.name ?? '');
  if (!agent) return 'has no Agent';
  if (origins.length === 0) return 'may have been sent anywhere: this agent knows none of its own origins (the kit\'s origins option)';
  const endpoint = agent.status?.endpoint ?? '';
  if (endpoint === '') return `has an Agent ${name} with no endpoint`;
  let o: string;
  try {
    o = origin(endpoint);
  } catch (err) {
    return `was sent through Agent ${name} to ${JSON.stringify(endpoint)}: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!origins.includes(o)) return `was sent to another agent (${o}, through Agent ${name})`;
  return '';
}

/**
 * The claim check on what was read (steps 2 to 4): why the claim does not
 * hold ("" when it does), and whether the Delegation was sent to this agent.
 */
export function claimRefusal(
  claim: DelegationClaim,
  d: ClaimedDelegation,
  agent: ClaimedAgent | undefined,
  origins: readonly string[],
): { reason: string; sentHere: boolean } {
  const where = sentTo(agent, origins);
  const sentHere = where === '';
  const st = d.status ?? {};
  const phase = st.phase ?? '';
  const taskId = st.taskID ?? '';
  const uid = d.metadata?.uid ?? '';
  let reason = '';
  if (d.metadata?.deletionTimestamp) reason = 'is being deleted';
  else if (d.spec?.cancel) reason = 'was cancelled';
  else if (d.spec?.detach) reason = 'was detached';
  else if (SETTLED.has(phase)) reason = `no longer runs (${phase})`;
  else if (taskId !== '' && taskId !== claim.taskId) reason = `was sent as task ${JSON.stringify(taskId)}, not ${JSON.stringify(claim.taskId)}`;
  else if (taskId === '' && (claim.messageId === '' || uid === '' || claim.messageId !== messageIdOf(uid)))
    reason = `did not send message ${JSON.stringify(claim.messageId)}`;
  else if (!sentHere) return { reason: where, sentHere: false };
  return { reason, sentHere };
}

/**
 * Step 0: why the message's sender may not make the claim ("" when it
 * may): with the kit's operator option, only the operator's identity may.
 */
export function callerRefusal(claim: DelegationClaim, operator: string | undefined): string {
  if (!operator || claim.caller === operator) return '';
  const from = claim.caller ? claim.caller : 'an unauthenticated caller';
  return `only the operator (${operator}) may name, and this message came from ${from}`;
}

/** Throws ClaimNotProvenError unless the claim holds on what was read. */
export function verifyClaim(
  claim: DelegationClaim,
  d: ClaimedDelegation | undefined,
  agent: ClaimedAgent | undefined,
  origins: readonly string[],
): void {
  const reason = d ? claimRefusal(claim, d, agent, origins).reason : 'it does not exist';
  if (reason !== '') {
    throw new ClaimNotProvenError(
      `the task is not the named Delegation's: it claims Delegation ${claim.namespace}/${claim.name}, which ${reason}`,
    );
  }
}
