// Enrollment as kubeadm does it: join tokens `[a-z0-9]{6}.[a-z0-9]{16}` (public id . secret,
// stored as SHA-256 of the secret only), a CSR per node, a node certificate back.
//
// Rules (docs/security.md):
// - A join token is bounded-use: single-use unless minted with `uses` > 1; it expires
//   (24 h by default) and can be revoked.
// - A CSR whose public key was ever certified is a replay: RANKD_CSR_REPLAYED.
// - A name that holds a valid (unexpired, unrevoked) certificate is in use:
//   RANKD_NODE_NAME_IN_USE until an admin runs `rankd node remove NAME`.
// - Except under an instance's join token (registerJoinToken with `rejoin`), for a name that
//   token enrolled: a pod restarted by Kubernetes or a retried Slurm step comes back with a
//   fresh key under its old name. Its old certificates are revoked and the use is not counted
//   again. Whoever holds the instance's join secret can derive its CA key anyway, so this
//   grants nothing that secret did not.
// - Renewal revokes the certificate it renews.
// - Revoked serials stay revoked; the gateway checks every handshake against this store.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  ErrorCode,
  InstanceErrorCode,
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
  /** The serials this enrollment revoked: the same name's earlier certificates (a rejoin). */
  replaced: string[];
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
  /** Ids of the instance join tokens under which a name may enroll again (a rejoin). */
  private readonly rejoinTokens = new Set<string>();

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

  /**
   * Registers a join token whose value the caller derived (an instance's join secret), once:
   * a controller restarted on the same data directory keeps the token's count of uses, and
   * takes the uses and ttl it is given now (the ttl counted from the first registration), so
   * that raising them in a manifest takes effect. A revoked token stays revoked.
   * `rejoin`: a name this token enrolled may enroll again under it (see the rules above).
   * Returns whether an existing registration's uses or expiry changed.
   */
  registerJoinToken(
    token: string,
    opts: { ttlMs: number; uses: number; description: string; rejoin: boolean },
  ): boolean {
    const m = /^([a-z0-9]{6})\.([a-z0-9]{16})$/.exec(token);
    if (!m) throw new RankdError(ErrorCode.InvalidRequest, 'a join token is id.secret: 6 and 16 of [a-z0-9]');
    const now = this.now();
    this.db
      .prepare(
        'INSERT OR IGNORE INTO join_tokens (id, secret_hash, description, created_at, expires_at, max_uses) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(m[1], sha256(m[2]!), opts.description.slice(0, 200), now, now + opts.ttlMs, opts.uses);
    // a kept row of another token under this id would be kept silently, and no agent could enroll
    const kept = this.db.prepare('SELECT secret_hash FROM join_tokens WHERE id = ?').get(m[1]) as {
      secret_hash: string;
    };
    if (kept.secret_hash !== sha256(m[2]!))
      throw new RankdError(
        InstanceErrorCode.JoinSecretMismatch,
        `join token ${m[1]} in this data directory is not the join secret's: start with a fresh data directory`,
      );
    if (opts.rejoin) this.rejoinTokens.add(m[1]!);
    const changed = this.db
      .prepare(
        'UPDATE join_tokens SET max_uses = ?, expires_at = created_at + ? ' +
          'WHERE id = ? AND (max_uses <> ? OR expires_at <> created_at + ?)',
      )
      .run(opts.uses, opts.ttlMs, m[1], opts.uses, opts.ttlMs);
    return changed.changes > 0;
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
    const via = `join-token:${row.id}`;
    const rejoin = this.rejoinTokens.has(row.id);
    // a rejoin is judged again inside the transaction; here it only spares the checks below
    if (!(rejoin && this.rejoinable(csr.name, via))) {
      this.checkUses(row.id);
      this.checkNameFree(csr.name);
    }
    const issued = await issueNodeCert(this.ca, csr, this.nodeCertTtlMs);
    // the checks above are re-run inside the transaction: two CSRs racing for one use or one name
    const replaced = this.db.transaction(() => {
      const again = rejoin && this.rejoinable(csr.name, via) ? this.revokeNode(csr.name) : [];
      if (again.length === 0) {
        this.checkUses(row.id);
        this.checkNameFree(csr.name);
        this.db.prepare('UPDATE join_tokens SET uses = uses + 1 WHERE id = ?').run(row.id);
      }
      this.record(issued, csr.name, csr.spkiHash, via);
      return again;
    })();
    return { node: csr.name, certificate: issued.certPem, serial: issued.serial, notAfter: issued.notAfter, replaced };
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
    return {
      node: csr.name,
      certificate: issued.certPem,
      serial: issued.serial,
      notAfter: issued.notAfter,
      replaced: [old],
    };
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

  private checkUses(tokenId: string): void {
    const row = this.db.prepare('SELECT uses, max_uses FROM join_tokens WHERE id = ?').get(tokenId) as {
      uses: number;
      max_uses: number;
    };
    if (row.uses >= row.max_uses)
      throw new RankdError(
        ErrorCode.JoinTokenUsed,
        `join token "${tokenId}" was already used ${plural(row.uses, 'time')} of ${row.max_uses}`,
      );
  }

  /** The name holds valid certificates, and this token enrolled every one of them. */
  private rejoinable(node: string, via: string): boolean {
    const active = this.db
      .prepare('SELECT via FROM node_certs WHERE node = ? AND revoked_at IS NULL AND not_after > ?')
      .all(node, this.now()) as Array<{ via: string }>;
    return active.length > 0 && active.every((r) => r.via === via);
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
