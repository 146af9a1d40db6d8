// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { RequestContext } from '@a2a-js/sdk/server';

import { DELEGATION_METADATA_KEY } from './constants.js';
import { extensionData } from './meta.js';
import type { DelegationClaim } from './scope.js';

/**
 * Reads "namespace/name" from the message, or from the first message of the
 * task when a reply does not repeat it.
 */
export function delegationOf(rc: RequestContext): DelegationClaim | undefined {
  const first = rc.task?.history?.[0] ?? rc.userMessage;
  let { found, value } = extensionData(rc.userMessage, rc.request.metadata, DELEGATION_METADATA_KEY);
  if (!found && first) ({ found, value } = extensionData(first, undefined, DELEGATION_METADATA_KEY));
  if (!found || typeof value !== 'string') return undefined;
  const slash = value.indexOf('/');
  const namespace = value.slice(0, slash);
  const name = value.slice(slash + 1);
  if (slash < 0 || namespace === '' || name === '') return undefined;
  return { namespace, name, messageId: first?.messageId ?? '', taskId: rc.taskId };
}

/** The Delegation fields a claim is checked against. */
export interface ClaimedDelegation {
  metadata?: { uid?: string };
  status?: { taskID?: string };
}

/** The id of a Delegation's first message, as the operator derives it from the UID. */
export function messageIdOf(uid: string, reply = -1): string {
  return reply < 0 ? `tether-${uid}` : `tether-${uid}-reply-${reply}`;
}

/**
 * Thrown by delegate() when the task names a Delegation that did not send
 * it. Nothing is created then, so a caller cannot spend another namespace's
 * budget or use its Agents by naming its Delegation.
 */
export class ClaimNotProvenError extends Error {
  override name = 'ClaimNotProvenError';
}

/**
 * Checks that the task is the named Delegation's: its first message id is
 * the one the operator derives from the Delegation's UID, or its task id is
 * the one in the Delegation's status. The same check as the Go agentkit's.
 */
export function verifyClaim(claim: DelegationClaim, d: ClaimedDelegation): void {
  const uid = d.metadata?.uid ?? '';
  if (claim.messageId !== '' && uid !== '' && claim.messageId === messageIdOf(uid)) return;
  if (claim.taskId !== '' && claim.taskId === (d.status?.taskID ?? '')) return;
  throw new ClaimNotProvenError(
    `the task is not the named Delegation's: it claims Delegation ${claim.namespace}/${claim.name}`,
  );
}
