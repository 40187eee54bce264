// The API token of REST clients, generated at first start and kept in the data directory
// with mode 0600. Agents have no shared secret any more: they enroll with single-use join
// tokens and then authenticate with their node certificates (tls/enrollment.ts); a
// `join-token` file left by an older version is ignored, never honoured (no downgrade).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Tokens {
  api: string;
  apiTokenFile: string;
}

export function loadOrCreateTokens(dataDir: string): Tokens {
  const apiTokenFile = join(dataDir, 'api-token');
  return { api: loadOrCreate(apiTokenFile), apiTokenFile };
}

function loadOrCreate(path: string): string {
  try {
    const token = readFileSync(path, 'utf8').trim();
    if (token.length >= 32) return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const token = randomBytes(32).toString('base64url');
  // 'wx' fails rather than overwrite a token another process just wrote
  writeFileSync(path, token + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return token;
}

/** Compares a presented "Bearer <token>" header with the expected token in constant time. */
export function bearerMatches(header: string | undefined, expected: string): boolean {
  if (!header) return false;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return false;
  const a = Buffer.from(m[1]!);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
