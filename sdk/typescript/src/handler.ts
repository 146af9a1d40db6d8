// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { Message, Task } from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';

import { budgetRequest } from './budget.js';
import { LEASE_EXTENSION_URI } from './constants.js';
import type { Kit } from './kit.js';
import { leaseGrantMeta, leaseRequest } from './lease.js';
import { extensionRequested } from './meta.js';

type Params<M extends keyof A2ARequestHandler> = Parameters<A2ARequestHandler[M]>[0];
type Result<M extends keyof A2ARequestHandler> = ReturnType<A2ARequestHandler[M]>;

/**
 * The SDK's request handler with the kit in front: what the Go agentkit's
 * call interceptor does for a2a-go.
 */
export class KitRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly kit: Kit,
    readonly inner: A2ARequestHandler,
  ) {}

  getAgentCard(): Result<'getAgentCard'> {
    return this.inner.getAgentCard();
  }

  getAuthenticatedExtendedAgentCard(params: Params<'getAuthenticatedExtendedAgentCard'>, context: ServerCallContext): Result<'getAuthenticatedExtendedAgentCard'> {
    return this.inner.getAuthenticatedExtendedAgentCard(params, context);
  }

  /**
   * Refusing bad extension metadata here, before the SDK creates a task,
   * is what makes a refused lease start nothing.
   */
  private checkSend(params: Params<'sendMessage'>, context: ServerCallContext): void {
    const ttl = leaseRequest(params.message, params.metadata, this.kit.maxLeaseTtlMs);
    budgetRequest(params.message, params.metadata);
    if (ttl !== undefined) context.addActivatedExtension(LEASE_EXTENSION_URI);
  }

  async sendMessage(params: Params<'sendMessage'>, context: ServerCallContext): Promise<Message | Task> {
    this.checkSend(params, context);
    const result = await this.inner.sendMessage(params, context);
    return 'id' in result && 'status' in result ? this.stamp(result) : result;
  }

  // Not a generator itself: a refusal is thrown at the call, so the
  // transport answers it as an error instead of opening a stream.
  sendMessageStream(params: Params<'sendMessageStream'>, context: ServerCallContext): Result<'sendMessageStream'> {
    this.checkSend(params, context);
    return this.stampStream(this.inner.sendMessageStream(params, context));
  }

  private async *stampStream(events: Result<'sendMessageStream'>): Result<'sendMessageStream'> {
    for await (const ev of events) {
      if (ev.payload?.$case === 'task') await this.stamp(ev.payload.value);
      yield ev;
    }
  }

  async getTask(params: Params<'getTask'>, context: ServerCallContext): Promise<Task> {
    // A renewal is a GetTask that activates the lease extension; a plain
    // GetTask renews nothing. It renews once the task store answered, so
    // only a caller that may read the task renews it.
    const renew = extensionRequested(context, LEASE_EXTENSION_URI);
    if (renew) context.addActivatedExtension(LEASE_EXTENSION_URI);
    const task = await this.inner.getTask(params, context);
    if (renew) {
      try {
        await this.kit.leases.renew(task.id, this.kit.now());
      } catch (err) {
        this.kit.logger.warn(`lease renewal of ${task.id} failed: ${String(err)}`);
      }
    }
    return this.stamp(task);
  }

  async cancelTask(params: Params<'cancelTask'>, context: ServerCallContext): Promise<Task> {
    return this.stamp(await this.inner.cancelTask(params, context));
  }

  async listTasks(params: Params<'listTasks'>, context: ServerCallContext): Result<'listTasks'> {
    const res = await this.inner.listTasks(params, context);
    for (const t of res.tasks) await this.stamp(t);
    return res;
  }

  resubscribe(params: Params<'resubscribe'>, context: ServerCallContext): Result<'resubscribe'> {
    return this.inner.resubscribe(params, context);
  }

  createTaskPushNotificationConfig(params: Params<'createTaskPushNotificationConfig'>, context: ServerCallContext): Result<'createTaskPushNotificationConfig'> {
    return this.inner.createTaskPushNotificationConfig(params, context);
  }

  getTaskPushNotificationConfig(params: Params<'getTaskPushNotificationConfig'>, context: ServerCallContext): Result<'getTaskPushNotificationConfig'> {
    return this.inner.getTaskPushNotificationConfig(params, context);
  }

  listTaskPushNotificationConfigs(params: Params<'listTaskPushNotificationConfigs'>, context: ServerCallContext): Result<'listTaskPushNotificationConfigs'> {
    return this.inner.listTaskPushNotificationConfigs(params, context);
  }

  deleteTaskPushNotificationConfig(params: Params<'deleteTaskPushNotificationConfig'>, context: ServerCallContext): Result<'deleteTaskPushNotificationConfig'> {
    return this.inner.deleteTaskPushNotificationConfig(params, context);
  }

  /**
   * Renewals live in the LeaseStore only (a renewal writes no task), so a
   * returned task is told the expiry from there.
   */
  private async stamp(task: Task): Promise<Task> {
    const l = await this.kit.leases.get(task.id).catch(() => undefined);
    if (l) task.metadata = { ...task.metadata, [LEASE_EXTENSION_URI]: leaseGrantMeta(l) };
    return task;
  }
}
