// A stable hash of the facts that matter, so that the agent re-sends facts only when
// the hardware view really changed: the time of the snapshot and the free-memory
// figures move on every read and are left out. Keys are hashed in sorted order, so the
// same facts hash the same after a trip through the controller, whose serializer
// writes keys in schema order.
import { createHash } from 'node:crypto';
import type { Facts } from '@rankd/protocol';

/** Keys whose values change between two reads of an unchanged machine. */
const VOLATILE = new Set(['collectedAt', 'memFreeKb', 'availableKb', 'free']);

export function factsHash(facts: Facts): string {
  return createHash('sha256').update(canonical(facts)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => !VOLATILE.has(k) && (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
