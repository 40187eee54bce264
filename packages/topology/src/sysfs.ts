// Safe readers for sysfs/procfs under a root directory.
//
// Every read strips NUL bytes (some kernels and captured dumps pad files with them),
// trims, and returns null instead of throwing. A file that is required but missing,
// unreadable or garbled adds a warning with a stable code, so the snapshot is still
// produced and says what it could not know. Reads go through one reused buffer and
// open/read/close: many tiny files are the whole cost of a snapshot, and readFileSync
// stats each file first.
import { closeSync, openSync, readSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import type { FactsWarning } from '@rankd/protocol';
// the cpuset module alone: the protocol index compiles every message schema on import
import { parseCpuList } from '@rankd/protocol/cpuset';

/** Warning codes. Published codes are never renamed; tools may branch on them. */
export const FactsWarningCode = {
  /** A file or directory the facts need does not exist. */
  Missing: 'FACTS_MISSING',
  /** It exists but could not be read (permissions, I/O error). */
  Unreadable: 'FACTS_UNREADABLE',
  /** It was read but its content does not parse. */
  Garbled: 'FACTS_GARBLED',
  /** Files disagree with each other (siblings that do not contain the CPU, rows of the wrong length…). */
  Inconsistent: 'FACTS_INCONSISTENT',
  /** Something was inferred rather than read (a NUMA node for a machine without NUMA in sysfs…). */
  Inferred: 'FACTS_INFERRED',
  /** The list of warnings itself was cut at its cap. */
  TooMany: 'FACTS_TOO_MANY_WARNINGS',
} as const;
export type FactsWarningCode = (typeof FactsWarningCode)[keyof typeof FactsWarningCode];

const MAX_WARNINGS = 1000;
const BUFFER = Buffer.allocUnsafe(64 * 1024);

export interface ReadOptions {
  /** A missing file is normal here: return null without a warning. */
  optional?: boolean;
  /** Read at most this many bytes (the start of /proc/cpuinfo is enough). */
  maxBytes?: number;
}

export class Sysfs {
  readonly warnings: FactsWarning[] = [];
  private readonly prefix: string;
  private realRoot: string | null = null;
  private readonly seen = new Set<string>();

  constructor(readonly root: string) {
    this.prefix = root === '/' ? '' : root.replace(/\/+$/, '');
  }

  /** The host path of a path inside the root ("/sys/…"). */
  abs(path: string): string {
    return this.prefix + path;
  }

  warn(code: FactsWarningCode, message: string, path?: string): void {
    const key = `${code}\0${path ?? message}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (this.warnings.length === MAX_WARNINGS) {
      this.warnings.push({
        code: FactsWarningCode.TooMany,
        message: `more than ${MAX_WARNINGS} warnings; the rest were dropped`,
      });
    }
    if (this.warnings.length > MAX_WARNINGS) return;
    this.warnings.push(
      path === undefined ? { code, message } : { code, message: message.slice(0, 1024), path: path.slice(0, 1024) },
    );
  }

  /** File content without NUL bytes and surrounding whitespace, or null. */
  text(path: string, options: ReadOptions = {}): string | null {
    const raw = this.raw(path, options);
    if (raw === null) return null;
    return raw.includes('\0') ? raw.replace(/\0/g, '').trim() : raw.trim();
  }

  /** File content as read (NUL bytes removed), or null. */
  raw(path: string, options: ReadOptions = {}): string | null {
    let fd: number;
    try {
      fd = openSync(this.abs(path), 'r');
    } catch (err) {
      this.failed(path, err as NodeJS.ErrnoException, options);
      return null;
    }
    try {
      const limit = options.maxBytes ?? Infinity;
      let out = '';
      let total = 0;
      for (;;) {
        const want = Math.min(BUFFER.length, limit - total);
        const n = readSync(fd, BUFFER, 0, want, null);
        if (n <= 0) break;
        out += BUFFER.toString('latin1', 0, n);
        total += n;
        // sysfs attributes and seq_file reads fill the buffer unless the file ended:
        // a short read saves the second syscall that would return 0
        if (n < want || total >= limit) break;
      }
      return out.includes('\0') ? out.replace(/\0/g, '') : out;
    } catch (err) {
      // sysfs attributes that have no value right now (speed of a down link, GID
      // attributes of empty slots) fail the read itself with EINVAL/ENODEV
      this.failed(path, err as NodeJS.ErrnoException, options);
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** A decimal or 0x-prefixed hexadecimal integer (negative allowed), or null. */
  int(path: string, options: ReadOptions = {}): number | null {
    const s = this.text(path, options);
    if (s === null) return null;
    const n = parseInteger(s);
    if (n === null) this.warn(FactsWarningCode.Garbled, `not an integer: "${s.slice(0, 64)}"`, path);
    return n;
  }

  /** A cpulist ("0-3,8"), or null. An empty file is an empty list. */
  list(path: string, options: ReadOptions = {}): number[] | null {
    const s = this.text(path, options);
    if (s === null) return null;
    try {
      return parseCpuList(s);
    } catch (err) {
      this.warn(FactsWarningCode.Garbled, `not a cpu list: ${(err as Error).message}`, path);
      return null;
    }
  }

  /** A cpumask ("ff,00000001"), or null. */
  mask(path: string, options: ReadOptions = {}): number[] | null {
    const s = this.text(path, options);
    if (s === null) return null;
    const cpus = parseMaskFast(s);
    if (cpus === null) this.warn(FactsWarningCode.Garbled, `not a cpu mask: "${s.slice(0, 64)}"`, path);
    return cpus;
  }

  /** Directory entries, or null. */
  entries(path: string, options: ReadOptions = {}): string[] | null {
    try {
      return readdirSync(this.abs(path));
    } catch (err) {
      this.failed(path, err as NodeJS.ErrnoException, options);
      return null;
    }
  }

  exists(path: string): boolean {
    return statSync(this.abs(path), { throwIfNoEntry: false }) !== undefined;
  }

  /** The target of a symlink as stored (usually relative), or null. */
  link(path: string): string | null {
    try {
      return readlinkSync(this.abs(path));
    } catch {
      return null;
    }
  }

  /** The canonical path inside the root ("/sys/devices/pci0000:00/…"), or null. */
  real(path: string): string | null {
    try {
      const full = realpathSync.native(this.abs(path));
      if (this.prefix === '') return full;
      this.realRoot ??= realpathSync.native(this.prefix);
      return full.startsWith(this.realRoot + '/') ? full.slice(this.realRoot.length) : null;
    } catch {
      return null;
    }
  }

  private failed(path: string, err: NodeJS.ErrnoException, options: ReadOptions): void {
    const missing = err.code === 'ENOENT' || err.code === 'ENOTDIR';
    if (missing && options.optional) return;
    if (!missing && options.optional && (err.code === 'EINVAL' || err.code === 'ENODEV' || err.code === 'EOPNOTSUPP'))
      return;
    if (missing) this.warn(FactsWarningCode.Missing, 'not found', path);
    else this.warn(FactsWarningCode.Unreadable, `cannot read: ${err.code ?? err.message}`, path);
  }
}

/**
 * A cpumask, least significant word last. Masks are as wide as the kernel's CPU limit
 * (1024 or 8192 bits) and mostly zero words, so those are skipped without parsing;
 * the result comes out sorted.
 */
export function parseMaskFast(text: string): number[] | null {
  const words = text.trim().split(',');
  const out: number[] = [];
  for (let w = 0; w < words.length; w++) {
    let word = words[words.length - 1 - w]!;
    if (word === '00000000') continue;
    if (word.length > 2 && (word[1] === 'x' || word[1] === 'X') && word[0] === '0') word = word.slice(2);
    if (word.length === 0 || word.length > 8) return null;
    let bits = 0;
    for (let i = 0; i < word.length; i++) {
      const d = HEX[word.charCodeAt(i)];
      if (d === undefined) return null;
      bits = bits * 16 + d;
    }
    for (let b = 0; bits !== 0; b++, bits = Math.floor(bits / 2)) if (bits % 2 === 1) out.push(w * 32 + b);
  }
  return out;
}

const HEX: Record<number, number> = {};
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** Parses "42", "-1", "0x1f"; null for anything else. */
export function parseInteger(s: string): number | null {
  const t = s.trim();
  if (/^-?\d+$/.test(t)) return Number(t);
  if (/^0x[0-9a-f]+$/i.test(t)) return parseInt(t.slice(2), 16);
  return null;
}

/** The last PCI address (domain:bus:dev.fn) in a device path, or null. */
export function pciAddressIn(path: string): string | null {
  const all = path.match(/[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]/gi);
  return all ? all[all.length - 1]!.toLowerCase() : null;
}
