// One shared secret as an instance's root of trust, where there is no channel to hand out a
// CA pin and a join token before anything runs: the pods of a PyTorchJob share a Secret,
// the steps of a Slurm allocation share srun's standard input. Every side derives the same
// two things from it with HKDF-SHA256:
// - the CA's P-256 key (FIPS 186-5 A.2.1: 64 extra bits, d = c mod (n − 1) + 1), so every
//   agent knows the CA's pin without asking anyone over the network;
// - a join token of the controller's `id.secret` form, registered for the instance's nodes.
// kubeadm's bootstrap tokens play the same part; here the CA pin needs no discovery step.
// Whoever holds the secret can enroll a node and pose as the controller: it is exactly as
// secret as a CA key, and is never put in argv.
//
// Not exported from the package index: it needs node:crypto, which the dashboard lacks.
import { createECDH, createHash, createPrivateKey, createPublicKey, hkdfSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InstanceErrorCode, RankdError } from './errors.js';

export const JOIN_SECRET_CHARS = { min: 32, max: 256 } as const;

/** Printable ASCII without space: what `openssl rand -base64 32` and a Kubernetes Secret carry. */
const SECRET = /^[\x21-\x7e]+$/;

/** The controller's token alphabet (tls/enrollment.ts), so a derived token is one of its shape. */
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_ID_CHARS = 6;
const TOKEN_SECRET_CHARS = 16;

/** The order of P-256's base point. */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

export interface JoinSecretMaterial {
  /** `id.secret`, as `rankd join-command` prints one. */
  joinToken: string;
  /** The token's id: what the controller lists and audits. */
  joinTokenId: string;
  /** The CA's private key, PKCS#8 PEM (only the controller uses it). */
  caKeyPem: string;
  /** sha256:HEX of the CA's SubjectPublicKeyInfo: the pin of `--ca-hash`. */
  caHash: string;
}

/** A fresh secret: 32 random bytes, base64url (43 characters). */
export function newJoinSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The problem with `secret`, or null when it is one. */
export function joinSecretProblem(secret: string): string | null {
  if (secret.length === 0) return 'it is empty; make one with "openssl rand -base64 32"';
  if (secret.length < JOIN_SECRET_CHARS.min)
    return `a join secret has at least ${JOIN_SECRET_CHARS.min} characters (this one has ${secret.length}); make one with "openssl rand -base64 32"`;
  if (secret.length > JOIN_SECRET_CHARS.max)
    return `a join secret has at most ${JOIN_SECRET_CHARS.max} characters (this one has ${secret.length})`;
  if (!SECRET.test(secret)) return `a join secret is printable ASCII without spaces: ${badCharacter(secret)}`;
  return null;
}

/**
 * Where and what the first character outside the alphabet is, without the character itself:
 * the rest of a mistyped secret may be the real one.
 */
function badCharacter(secret: string): string {
  const chars = [...secret];
  const at = chars.findIndex((c) => !SECRET.test(c));
  const c = chars[at]!;
  const what =
    c === ' '
      ? 'a space'
      : c === '\n' || c === '\r'
        ? 'a line break (one secret, on one line)'
        : c === '\t'
          ? 'a tab'
          : c.charCodeAt(0) > 0x7e
            ? 'not ASCII'
            : 'a control character';
  return `character ${at + 1} is ${what}`;
}

/**
 * Reads a join secret from a file, or from standard input to its end when `path` is "-"
 * (how srun hands it to every task). One trailing newline is not part of it.
 */
export function readJoinSecret(path: string): string {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new RankdError(
      InstanceErrorCode.JoinSecretInvalid,
      `cannot read the join secret from ${path === '-' ? 'standard input' : path}: ${(err as Error).message}`,
    );
  }
  return checkedJoinSecret(text.replace(/\r?\n$/, ''), path === '-' ? 'standard input' : path);
}

/** `secret` when it is one, else RANKD_JOIN_SECRET_INVALID naming `source` and the problem. */
export function checkedJoinSecret(secret: string, source: string): string {
  const problem = joinSecretProblem(secret);
  if (problem) throw new RankdError(InstanceErrorCode.JoinSecretInvalid, `the join secret of ${source}: ${problem}`);
  return secret;
}

function derive(secret: string, purpose: string, bytes: number): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'rankd join secret v1', purpose, bytes));
}

/** `n` characters of TOKEN_ALPHABET from derived bytes, without modulo bias. */
function tokenChars(secret: string, purpose: string, n: number): string {
  // 36 does not divide 256: bytes of 252 and up are skipped; 4n bytes leave n with overwhelming odds
  const bytes = derive(secret, purpose, 4 * n);
  let out = '';
  for (const b of bytes) if (b < 252 && out.length < n) out += TOKEN_ALPHABET[b % 36];
  if (out.length < n) throw new Error(`join secret: too few usable bytes for ${purpose}`);
  return out;
}

export function deriveJoinMaterial(secret: string): JoinSecretMaterial {
  const problem = joinSecretProblem(secret);
  if (problem) throw new RankdError(InstanceErrorCode.JoinSecretInvalid, problem);
  const joinTokenId = tokenChars(secret, 'join token id', TOKEN_ID_CHARS);
  const joinToken = `${joinTokenId}.${tokenChars(secret, 'join token secret', TOKEN_SECRET_CHARS)}`;

  const c = BigInt('0x' + derive(secret, 'ca key', 40).toString('hex'));
  const d = Buffer.from(((c % (P256_ORDER - 1n)) + 1n).toString(16).padStart(64, '0'), 'hex');
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(d);
  const point = ecdh.getPublicKey(); // 0x04 ‖ x ‖ y
  const key = createPrivateKey({
    format: 'jwk',
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: d.toString('base64url'),
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
  });
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return {
    joinToken,
    joinTokenId,
    caKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    caHash: 'sha256:' + createHash('sha256').update(spki).digest('hex'),
  };
}
