// Copyright 2026 The tether Authors.
// SPDX-License-Identifier: Apache-2.0

import type { Message } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';

/** Metadata as the SDK carries it: decoded JSON. */
export type Metadata = Record<string, unknown> | undefined;

/**
 * Finds the data a client sent under an extension URI: in the message
 * metadata or, failing that, in the request metadata (clients differ; the
 * operator sends both).
 */
export function extensionData(message: Message | undefined, requestMeta: Metadata, uri: string): { found: boolean; value: unknown } {
  const m = message?.metadata as Metadata;
  if (m && Object.hasOwn(m, uri)) return { found: true, value: m[uri] };
  if (requestMeta && Object.hasOwn(requestMeta, uri)) return { found: true, value: requestMeta[uri] };
  return { found: false, value: undefined };
}

/**
 * Reports whether the client activated uri with the A2A-Extensions header
 * (X-A2A-Extensions for 0.3, which the SDK's 0.3 binding maps onto the same
 * list). Values may be comma-separated.
 */
export function extensionRequested(context: ServerCallContext | undefined, uri: string): boolean {
  for (const v of context?.requestedExtensions ?? []) {
    for (const u of String(v).split(',')) {
      if (u.trim() === uri) return true;
    }
  }
  return false;
}

/** A plain JSON object, or undefined for anything else. */
export function asObject(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
