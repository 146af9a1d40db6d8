// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { Message } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';

import { LEASE_EXTENSION_URI, MIN_LEASE_TTL_MS } from './constants.js';
import { asObject, extensionData, type Metadata } from './meta.js';

/** How long a task may live without a renewal. */
export interface Lease {
  taskId: string;
  ttlMs: number;
  /** Milliseconds since the epoch. */
  expiresAt: number;
  /**
   * Where the task lives in the task store (the SDK scopes tasks by tenant
   * and user), so the sweeper cancels it in the same scope it was sent in.
   */
  tenant?: string;
  user?: string;
}

/**
 * Keeps leases. The default lives in memory; replicas of one agent that
 * share a task store should share a LeaseStore too, so a renewal served by
 * one replica holds off the sweeper of another.
 */
export interface LeaseStore {
  /** Grants or replaces the lease of a task. */
  put(lease: Lease): Promise<void>;
  /** The lease of a task; undefined when there is none. */
  get(taskId: string): Promise<Lease | undefined>;
  /**
   * Moves a live lease to now+ttl and returns it. A lapsed lease is not
   * revived: undefined is returned and the sweeper cancels its task.
   */
  renew(taskId: string, now: number): Promise<Lease | undefined>;
  /** Forgets a lease; deleting a missing one is not an error. */
  delete(taskId: string): Promise<void>;
  /** The leases that lapsed at or before now. */
  expired(now: number): Promise<Lease[]>;
}

/** A LeaseStore for a single process. */
export class MemoryLeaseStore implements LeaseStore {
  private readonly leases = new Map<string, Lease>();

  async put(lease: Lease): Promise<void> {
    this.leases.set(lease.taskId, { ...lease });
  }

  async get(taskId: string): Promise<Lease | undefined> {
    const l = this.leases.get(taskId);
    return l && { ...l };
  }

  async renew(taskId: string, now: number): Promise<Lease | undefined> {
    const l = this.leases.get(taskId);
    if (!l || now >= l.expiresAt) return undefined;
    l.expiresAt = now + l.ttlMs;
    return { ...l };
  }

  async delete(taskId: string): Promise<void> {
    this.leases.delete(taskId);
  }

  async expired(now: number): Promise<Lease[]> {
    return [...this.leases.values()].filter((l) => now >= l.expiresAt).map((l) => ({ ...l }));
  }
}

/**
 * Reads the lease a SendMessage asks for, in milliseconds; undefined when it
 * asks for none. A malformed or out-of-range request is an InvalidParams
 * error (-32602), so the client learns at once instead of getting a task
 * that never expires.
 */
export function leaseRequest(message: Message | undefined, requestMeta: Metadata, maxTtlMs: number): number | undefined {
  const { found, value } = extensionData(message, requestMeta, LEASE_EXTENSION_URI);
  if (!found) return undefined;
  let seconds = 0; // null or a missing ttlSeconds reads as 0: out of range
  if (value !== null) {
    const obj = asObject(value);
    if (!obj) throw new RequestMalformedError('lease extension metadata: not an object');
    const ttl = obj['ttlSeconds'];
    if (ttl !== undefined && ttl !== null) {
      if (typeof ttl !== 'number' || !Number.isFinite(ttl)) {
        throw new RequestMalformedError('lease extension metadata: ttlSeconds is not a number');
      }
      seconds = ttl;
    }
  }
  const ms = seconds * 1000;
  if (ms < MIN_LEASE_TTL_MS || ms > maxTtlMs) {
    throw new RequestMalformedError(
      `lease ttlSeconds ${seconds} is outside ${MIN_LEASE_TTL_MS / 1000}s..${maxTtlMs / 1000}s`,
    );
  }
  return ms;
}

/** The task metadata an agent answers a granted lease with. */
export function leaseGrantMeta(lease: Lease): { expiresAt: string } {
  return { expiresAt: new Date(lease.expiresAt).toISOString() };
}
