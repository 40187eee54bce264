// Enrollment as kubeadm does it: join tokens `[a-z0-9]{6}.[a-z0-9]{16}` (public id . secret,
// stored as SHA-256 of the secret only), a CSR per node, a node certificate back.
//
// Rules (docs/security.md):
// - A join token is bounded-use: single-use unless minted with `uses` > 1; it expires
//   (24 h by default) and can be revoked.
// - A CSR whose public key was ever certified is a replay: RANKD_CSR_REPLAYED.
// - A name that holds a valid (unexpired, unrevoked) certificate is in use:
//   RANKD_NODE_NAME_IN_USE until an admin runs `rankd node remove NAME`.
// - Renewal revokes the certificate it renews.
// - Revoked serials stay revoked; the gateway checks every handshake against this store.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  ErrorCode,
  JOIN_TOKEN_PATTERN,
  MAX_CSR_BYTES,
  RankdError,
  nodeNameProblem,
  type JoinTokenView,
} from '@rankd/protocol';
import type { Db } from '../store/database.js';
import { issueNodeCert, normalSerial, parseCsr, type KeyPair } from './pki.js';
import { plural } from '@rankd/protocol/plural';

export const DEFAULT_JOIN_TOKEN_TTL_MS = 24 * 3_600_000;
export const DEFAULT_NODE_CERT_TTL_MS = 365 * 86_400_000;

interface TokenRow {
  id: string;
  secret_hash: string;
  description: string;
  created_at: number;
  expires_at: number;
  max_uses: number;
  uses: number;
  revoked_at: number | null;
}

interface CertRow {
  serial: string;
  node: string;
  not_after: number;
  revoked_at: number | null;
}

export interface Issued {
  node: string;
  certificate: string;
  serial: string;
  notAfter: number;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function randomChars(n: number): string {
  // 36 does not divide 256: reject the bytes that would bias the draw
  let out = '';
  while (out.length < n) for (const b of randomBytes(n * 2)) if (b < 252 && out.length < n) out += ALPHABET[b % 36];
  return out;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export class Enrollment {
  /** serial → node and revocation, kept in memory: checked at every agent handshake. */
  private readonly certs = new Map<string, { node: string; revoked: boolean }>();

  constructor(
    private readonly db: Db,
    private readonly ca: KeyPair,
    private readonly nodeCertTtlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    for (const row of db.prepare('SELECT serial, node, not_after, revoked_at FROM node_certs').all() as CertRow[]) {
      this.certs.set(row.serial, { node: row.node, revoked: row.revoked_at !== null });
    }
  }

  mintJoinToken(opts: { ttlMs?: number; uses?: number; description?: string } = {}): {
    token: string;
    id: string;
    expiresAt: string;
    maxUses: number;
  } {
    const ttlMs = opts.ttlMs ?? DEFAULT_JOIN_TOKEN_TTL_MS;
    const maxUses = opts.uses ?? 1;
    if (!(ttlMs > 0) || !Number.isInteger(maxUses) || maxUses < 1)
      throw new RankdError(ErrorCode.InvalidRequest, 'a join token needs a positive ttl and uses >= 1');
    const id = randomChars(6);
    const secret = randomChars(16);
    const now = this.now();
    this.db
      .prepare(
        'INSERT INTO join_tokens (id, secret_hash, description, created_at, expires_at, max_uses) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(id, sha256(secret), (opts.description ?? '').slice(0, 200), now, now + ttlMs, maxUses);
    return { token: `${id}.${secret}`, id, expiresAt: new Date(now + ttlMs).toISOString(), maxUses };
  }

  listJoinTokens(): JoinTokenView[] {
    const rows = this.db.prepare('SELECT * FROM join_tokens ORDER BY created_at').all() as TokenRow[];
    return rows.map((r) => this.view(r));
  }

  revokeJoinToken(id: string): JoinTokenView {
    const row = this.db.prepare('SELECT * FROM join_tokens WHERE id = ?').get(id) as TokenRow | undefined;
    if (!row) throw new RankdError(ErrorCode.JoinTokenUnknown, `no join token with id "${String(id).slice(0, 20)}"`);
    if (row.revoked_at === null)
      this.db.prepare('UPDATE join_tokens SET revoked_at = ? WHERE id = ?').run(this.now(), id);
    return this.view({ ...row, revoked_at: row.revoked_at ?? this.now() });
  }

  private view(r: TokenRow): JoinTokenView {
    const state =
      r.revoked_at !== null
        ? 'revoked'
        : r.expires_at <= this.now()
          ? 'expired'
          : r.uses >= r.max_uses
            ? 'used'
            : 'valid';
    return {
      id: r.id,
      description: r.description,
      createdAt: new Date(r.created_at).toISOString(),
      expiresAt: new Date(r.expires_at).toISOString(),
      maxUses: r.max_uses,
      uses: r.uses,
      revoked: r.revoked_at !== null,
      state,
    };
  }

  /** Enrolls a node: join token + CSR → node certificate. Throws RankdError with a stable code. */
  async enroll(token: string, csrPem: string): Promise<Issued> {
    const m = JOIN_TOKEN_PATTERN.exec(token ?? '');
    if (!m)
      throw new RankdError(ErrorCode.JoinTokenUnknown, 'malformed join token (expected [a-z0-9]{6}.[a-z0-9]{16})');
    const row = this.db.prepare('SELECT * FROM join_tokens WHERE id = ?').get(m[1]) as TokenRow | undefined;
    const presented = Buffer.from(sha256(m[2]!));
    if (!row || !timingSafeEqual(presented, Buffer.from(row.secret_hash)))
      throw new RankdError(ErrorCode.JoinTokenUnknown, `unknown join token "${m[1]}"`);
    if (row.revoked_at !== null) throw new RankdError(ErrorCode.JoinTokenRevoked, `join token "${row.id}" was revoked`);
    if (row.expires_at <= this.now())
      throw new RankdError(
        ErrorCode.JoinTokenExpired,
        `join token "${row.id}" expired at ${new Date(row.expires_at).toISOString()}`,
      );
    const csr = await this.csr(csrPem);
    if (row.uses >= row.max_uses)
      throw new RankdError(
        ErrorCode.JoinTokenUsed,
        `join token "${row.id}" was already used ${plural(row.uses, 'time')} of ${row.max_uses}`,
      );
    this.checkNameFree(csr.name);
    const issued = await issueNodeCert(this.ca, csr, this.nodeCertTtlMs);
    // the checks above are re-run inside the transaction: two CSRs racing for one use or one name
    this.db.transaction(() => {
      const fresh = this.db.prepare('SELECT uses, max_uses FROM join_tokens WHERE id = ?').get(row.id) as {
        uses: number;
        max_uses: number;
      };
      if (fresh.uses >= fresh.max_uses)
        throw new RankdError(ErrorCode.JoinTokenUsed, `join token "${row.id}" was already used`);
      this.checkNameFree(csr.name);
      this.db.prepare('UPDATE join_tokens SET uses = uses + 1 WHERE id = ?').run(row.id);
      this.record(issued, csr.name, csr.spkiHash, `join-token:${row.id}`);
    })();
    return { node: csr.name, certificate: issued.certPem, serial: issued.serial, notAfter: issued.notAfter };
  }

  /**
   * Renews the certificate of an authenticated node (mTLS): same name, a new key. The
   * certificate it renewed is revoked in the same transaction, so a copy of the old key is
   * worth nothing from then on, and one certificate renews once: a second renewal with it
   * (a thief racing the node) is refused as revoked.
   */
  async renew(peer: { node: string; serial: string }, csrPem: string): Promise<Issued> {
    this.checkSerial(peer.serial, peer.node);
    const csr = await this.csr(csrPem);
    if (csr.name !== peer.node)
      throw new RankdError(
        ErrorCode.NodeIdentityMismatch,
        `node "${peer.node}" cannot request a certificate for "${csr.name}"`,
      );
    const issued = await issueNodeCert(this.ca, csr, this.nodeCertTtlMs);
    const old = normalSerial(peer.serial);
    this.db.transaction(() => {
      // re-checked inside the transaction: two renewals racing with one certificate
      this.checkSerial(old, peer.node);
      this.record(issued, csr.name, csr.spkiHash, `renewal:${old}`);
      this.db
        .prepare('UPDATE node_certs SET revoked_at = ? WHERE serial = ? AND revoked_at IS NULL')
        .run(this.now(), old);
    })();
    this.certs.set(old, { node: peer.node, revoked: true });
    return { node: csr.name, certificate: issued.certPem, serial: issued.serial, notAfter: issued.notAfter };
  }

  /** Throws unless this serial was issued to this node and is not revoked (called at every handshake). */
  checkSerial(serial: string, node: string): void {
    const cert = this.certs.get(normalSerial(serial));
    if (!cert || cert.node !== node)
      throw new RankdError(
        ErrorCode.NodeCertInvalid,
        `certificate ${normalSerial(serial)} for "${node}" is not known to this controller`,
      );
    if (cert.revoked) throw new RankdError(ErrorCode.NodeCertRevoked, `the certificate of node "${node}" was revoked`);
  }

  /** Revokes every certificate of a node (`rankd node remove`); the name is free again. Returns the serials. */
  revokeNode(node: string): string[] {
    const rows = this.db
      .prepare('SELECT serial FROM node_certs WHERE node = ? AND revoked_at IS NULL')
      .all(node) as Array<{ serial: string }>;
    this.db.prepare('UPDATE node_certs SET revoked_at = ? WHERE node = ? AND revoked_at IS NULL').run(this.now(), node);
    for (const r of rows) this.certs.set(r.serial, { node, revoked: true });
    return rows.map((r) => r.serial);
  }

  /** Nodes with at least one certificate ever issued. */
  knows(node: string): boolean {
    return this.db.prepare('SELECT 1 FROM node_certs WHERE node = ? LIMIT 1').get(node) !== undefined;
  }

  private async csr(csrPem: string) {
    if (typeof csrPem !== 'string' || Buffer.byteLength(csrPem) > MAX_CSR_BYTES)
      throw new RankdError(ErrorCode.CsrTooLarge, `a CSR is at most ${MAX_CSR_BYTES} bytes`);
    let csr;
    try {
      csr = await parseCsr(csrPem);
    } catch (err) {
      throw new RankdError(ErrorCode.CsrInvalid, (err as Error).message);
    }
    const problem = nodeNameProblem(csr.name);
    if (problem) throw new RankdError(ErrorCode.InvalidNodeName, problem);
    if (this.db.prepare('SELECT 1 FROM node_certs WHERE spki_sha256 = ?').get(csr.spkiHash)) {
      throw new RankdError(
        ErrorCode.CsrReplayed,
        "this CSR's public key was already certified: a replayed CSR, or a reused key (generate a new key)",
      );
    }
    return csr;
  }

  private checkNameFree(node: string): void {
    const active = this.db
      .prepare('SELECT serial FROM node_certs WHERE node = ? AND revoked_at IS NULL AND not_after > ? LIMIT 1')
      .get(node, this.now()) as { serial: string } | undefined;
    if (active) {
      throw new RankdError(
        ErrorCode.NodeNameInUse,
        `node name "${node}" is enrolled under another key (certificate ${active.serial}); an admin must run "rankd node remove ${node}" first`,
      );
    }
  }

  private record(issued: { serial: string; notAfter: number }, node: string, spkiHash: string, via: string): void {
    this.db
      .prepare(
        'INSERT INTO node_certs (serial, node, spki_sha256, issued_at, not_after, via) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(issued.serial, node, spkiHash, this.now(), issued.notAfter, via);
    this.certs.set(issued.serial, { node, revoked: false });
  }
}
