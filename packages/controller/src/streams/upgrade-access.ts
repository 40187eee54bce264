// What the WebSocket relays (the shell in fleet/, a job's stdin in jobs/) need of access
// control: they depend on this interface, not on the REST API's auth module, which sits
// above them (api/auth.ts implements it).
import type { IncomingMessage } from 'node:http';
import type { Permission, Scope } from '@rankd/protocol';
import type { AuditLog } from '../store/audit-log.js';
import type { Principal } from '../store/users-repo.js';
import type { OpenStreams } from './open-streams.js';

/** A refusal in HTTP terms: its status, stable code and message. */
export interface Refusal {
  status: number;
  code: string;
  message: string;
}

export type UpgradeVerdict =
  { principal: Principal } | { refusal: Refusal & { retryAfter?: number }; principal: Principal | null };

export interface UpgradeAccess {
  /** Authentication and role check of a WebSocket upgrade on `route`. */
  authorizeUpgrade(req: IncomingMessage, route: string): Promise<UpgradeVerdict>;
  /** The principal's grant of a permission; undefined when its role has none. */
  scopeOf(principal: Principal, permission: Permission): Scope | undefined;
  /** Where sessions are recorded, and the streams revocation ends. */
  readonly deps: { readonly audit: AuditLog; readonly streams: OpenStreams };
}
