import { randomBytes } from 'node:crypto';

/** Short, sortable by creation time, and unguessable enough not to collide: j<time36><hex>. */
export function newJobId(now = Date.now()): string {
  return `j${now.toString(36)}${randomBytes(3).toString('hex')}`;
}
