// The agent's identity: enrollment with a join token and a pinned CA hash (kubeadm's
// `--discovery-token-ca-cert-hash`), then a node certificate kept in the state directory
// (node.key, node.crt, ca.crt, mode 0600), renewed before it expires.
//
// No trust on first use: the CA is fetched over TLS *without* trusting the server, it must
// be exactly one CA certificate (protocol/ca-pin.ts: a second one appended by a man in the
// middle is refused, never trusted under the first one's hash), its public key hash must
// equal --ca-hash, and only then is it pinned, alone. The join token goes out only after
// that, over a connection verified against that one CA: a man in the middle with another
// CA fails the hash; one that relays the real CA fails the verified connection.
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pinnableCa } from '@rankd/protocol/ca-pin';
import { ErrorCode, RankdError } from '@rankd/protocol/errors';
import type { Logger } from 'pino';
import { keyAndCsr } from './csr.js';

export interface NodeIdentity {
  name: string;
  key: string;
  cert: string;
  /** The CA the controller's serving certificate chains to (pinned at enrollment). */
  ca: string;
  notBefore: number;
  notAfter: number;
  serial: string;
}

const FILES = { key: 'node.key', cert: 'node.crt', ca: 'ca.crt' } as const;

/** The identity kept in the state directory, or null when there is none. Throws when it belongs to another name. */
export function loadIdentity(stateDir: string, name: string): NodeIdentity | null {
  const paths = Object.values(FILES).map((f) => join(stateDir, f));
  if (!paths.every((p) => existsSync(p))) return null;
  const [key, cert, caFile] = paths.map((p) => readFileSync(p, 'utf8')) as [string, string, string];
  // a ca.crt of several certificates (pinned before this check existed) is refused, not trusted
  const ca = pinnableCa(caFile, `the pinned CA ${join(stateDir, FILES.ca)}`).pem;
  const identity = describe(name, key, cert, ca);
  const subject = new X509Certificate(cert).subject;
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(subject)?.[1];
  if (cn !== name)
    throw new RankdError(
      ErrorCode.NodeIdentityMismatch,
      `the state directory ${stateDir} holds the identity of node "${cn}", not "${name}": use another --state-dir or --name "${cn}"`,
    );
  return identity;
}

function describe(name: string, key: string, cert: string, ca: string): NodeIdentity {
  const x = new X509Certificate(cert);
  return {
    name,
    key,
    cert,
    ca,
    notBefore: Date.parse(x.validFrom),
    notAfter: Date.parse(x.validTo),
    serial: x.serialNumber,
  };
}

function save(stateDir: string, identity: { key: string; cert: string; ca: string }): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  for (const [field, file] of Object.entries(FILES) as Array<[keyof typeof FILES, string]>) {
    const path = join(stateDir, file);
    writeFileSync(path + '.tmp', identity[field], { mode: 0o600 });
    chmodSync(path + '.tmp', 0o600);
    renameSync(path + '.tmp', path);
  }
}

interface HttpsAnswer {
  status: number;
  body: string;
}

async function httpsRequest(
  url: URL,
  options: { method?: string; body?: unknown; ca?: string; cert?: string; key?: string; pinless?: boolean },
): Promise<HttpsAnswer> {
  const https = await import('node:https');
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  return new Promise((resolve, reject) => {
    const req = https.request(url, {
      method: options.method ?? 'GET',
      agent: false,
      timeout: 15_000,
      // only for fetching the CA, whose hash is then checked: nothing else is read from it
      rejectUnauthorized: !options.pinless,
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.cert ? { cert: options.cert, key: options.key } : {}),
      headers: payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {},
    });
    req.once('timeout', () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > 256 * 1024) req.destroy(new Error('answer too large'));
        else chunks.push(d);
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.once('error', reject);
    });
    req.end(payload);
  });
}

function refusal(answer: HttpsAnswer, what: string): RankdError {
  try {
    const body = JSON.parse(answer.body) as { code?: string; message?: string };
    return new RankdError(
      body.code ?? ErrorCode.Internal,
      `${what} refused (HTTP ${answer.status}): ${body.message ?? answer.body} (${body.code ?? '?'})`,
    );
  } catch {
    return new RankdError(ErrorCode.Internal, `${what} refused (HTTP ${answer.status}): ${answer.body.slice(0, 200)}`);
  }
}

/** A TLS verification failure in words, with a stable code; any other transport error as it is. */
function untrusted(err: NodeJS.ErrnoException, controller: string): Error {
  const code = err.code ?? '';
  if (!/CERT|SELF_SIGNED|UNABLE_TO|ALTNAME|PURPOSE/.test(code)) return err;
  return new RankdError(
    ErrorCode.ServerCertUntrusted,
    `the controller at ${controller} served the pinned CA but a TLS certificate that CA does not vouch for (${code}): someone in the middle relaying it? The join token was not sent`,
  );
}

function base(controller: string, path: string): URL {
  const url = new URL(controller);
  if (url.protocol !== 'https:')
    throw new RankdError(ErrorCode.InvalidRequest, `the controller URL must be https:// (got ${controller})`);
  url.pathname = url.pathname.replace(/\/+$/, '') + path;
  return url;
}

/**
 * Fetches the controller's CA without trusting it and returns it (that one certificate,
 * re-encoded) only when it is exactly one CA certificate whose hash is the pinned one.
 */
export async function fetchPinnedCa(controller: string, caHash: string): Promise<string> {
  const wanted = caHash.trim().toLowerCase();
  if (!/^sha256:[0-9a-f]{64}$/.test(wanted))
    throw new RankdError(
      ErrorCode.InvalidRequest,
      `--ca-hash must be sha256:<64 hex digits> (got "${caHash.slice(0, 80)}")`,
    );
  const answer = await httpsRequest(base(controller, '/v1/enroll/ca'), { pinless: true });
  if (answer.status !== 200) throw refusal(answer, 'fetching the CA');
  const served = pinnableCa(
    answer.body,
    `the CA served by ${controller}/v1/enroll/ca (someone in the middle, or a controller older than this agent)`,
  );
  if (served.hash !== wanted) {
    throw new RankdError(
      ErrorCode.CaHashMismatch,
      `the controller at ${controller} presents a CA whose hash is ${served.hash}, not the pinned ${wanted}: refusing it (a wrong --ca-hash, or someone in the middle)`,
    );
  }
  return served.pem;
}

/** Enrolls: pinned CA, a new key, a CSR with the join token; the identity is saved and returned. */
export async function enroll(opts: {
  controller: string;
  joinToken: string;
  caHash: string;
  name: string;
  stateDir: string;
  log: Logger;
}): Promise<NodeIdentity> {
  const ca = await fetchPinnedCa(opts.controller, opts.caHash);
  const { key, csr } = await keyAndCsr(opts.name);
  // the token is written only once the TLS handshake verified the server against that one CA
  const answer = await httpsRequest(base(opts.controller, '/v1/enroll'), {
    method: 'POST',
    ca,
    body: { token: opts.joinToken, csr },
  }).catch((err: NodeJS.ErrnoException) => {
    throw untrusted(err, opts.controller);
  });
  if (answer.status !== 200) throw refusal(answer, 'enrollment');
  const { certificate } = JSON.parse(answer.body) as { certificate: string };
  save(opts.stateDir, { key, cert: certificate, ca });
  const identity = describe(opts.name, key, certificate, ca);
  opts.log.info(
    {
      node: opts.name,
      serial: identity.serial,
      notAfter: new Date(identity.notAfter).toISOString(),
      stateDir: opts.stateDir,
    },
    'enrolled: node certificate received',
  );
  return identity;
}

/** Renews over mTLS with the current certificate: a new key, the same name. */
export async function renew(
  current: NodeIdentity,
  opts: { controller: string; stateDir: string; log: Logger },
): Promise<NodeIdentity> {
  const { key, csr } = await keyAndCsr(current.name);
  const answer = await httpsRequest(base(opts.controller, '/v1/enroll/renew'), {
    method: 'POST',
    ca: current.ca,
    cert: current.cert,
    key: current.key,
    body: { csr },
  });
  if (answer.status !== 200) throw refusal(answer, 'renewal');
  const { certificate } = JSON.parse(answer.body) as { certificate: string };
  save(opts.stateDir, { key, cert: certificate, ca: current.ca });
  const identity = describe(current.name, key, certificate, current.ca);
  opts.log.info(
    { node: current.name, serial: identity.serial, notAfter: new Date(identity.notAfter).toISOString() },
    'node certificate renewed',
  );
  return identity;
}

/** When to renew: at about 2/3 of the certificate's life (a little jitter spreads a fleet out). */
export function renewalDelay(identity: NodeIdentity, now = Date.now()): number {
  const life = identity.notAfter - identity.notBefore;
  const at = identity.notBefore + life * (0.64 + Math.random() * 0.06);
  return Math.max(0, at - now);
}
