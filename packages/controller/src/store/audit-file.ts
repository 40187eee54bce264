// <data dir>/audit.jsonl: the audit log, one JSON object a line, for shipping elsewhere.
//
// Rotated by size, as logrotate would: once a line would take the file past `maxBytes`,
// audit.jsonl becomes audit.jsonl.1, .1 becomes .2, … and the oldest past `keep` is deleted;
// a new audit.jsonl is started. Shippers that follow the file by name (Filebeat, Vector,
// fluent-bit) pick the new one up. Every file is mode 0600.
import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

export interface AuditFileLimits {
  /** audit.jsonl is rotated before a line would take it past this many bytes. */
  maxBytes: number;
  /** Rotated files kept beside it (audit.jsonl.1 … .keep); older ones are deleted. */
  keep: number;
}

export const DEFAULT_AUDIT_FILE_LIMITS: AuditFileLimits = { maxBytes: 64 * 1024 * 1024, keep: 5 };

export class AuditFile {
  private fd: number | null;
  private size: number;

  constructor(
    readonly path: string,
    private readonly limits: AuditFileLimits = DEFAULT_AUDIT_FILE_LIMITS,
  ) {
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  append(line: string): void {
    if (this.fd === null) throw new Error('audit log closed');
    const bytes = Buffer.from(line + '\n');
    if (this.size > 0 && this.size + bytes.length > this.limits.maxBytes) this.rotate();
    writeSync(this.fd, bytes);
    this.size += bytes.length;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private rotate(): void {
    closeSync(this.fd!);
    this.fd = null;
    const { keep } = this.limits;
    rmSync(`${this.path}.${keep}`, { force: true });
    for (let i = keep - 1; i >= 1; i--) renameIfThere(`${this.path}.${i}`, `${this.path}.${i + 1}`);
    if (keep > 0) renameSync(this.path, `${this.path}.1`);
    else rmSync(this.path, { force: true });
    this.fd = openSync(this.path, 'a', 0o600);
    this.size = 0;
  }
}

function renameIfThere(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
