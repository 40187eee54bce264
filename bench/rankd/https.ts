// HTTPS to the bench's own controllers: they speak TLS only, with a CA of their own that
// no system trust store holds, so every request verifies the server against that CA
// (node:https with `ca`; Node 20's fetch cannot be given one). Loopback only.
import https from 'node:https';

export interface HttpsAnswer {
  status: number;
  text: string;
}

/** One request, bounded by `timeoutMs` for the whole exchange (body included). */
export function httpsRequest(
  url: string,
  opts: {
    ca: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs: number;
    agent?: https.Agent;
    cert?: string;
    key?: string;
  },
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : Buffer.from(opts.body);
    const req = https.request(url, {
      method: opts.method ?? 'GET',
      ca: opts.ca,
      ...(opts.cert ? { cert: opts.cert, key: opts.key } : {}),
      agent: opts.agent ?? false,
      headers: { ...opts.headers, ...(payload ? { 'content-length': String(payload.length) } : {}) },
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.once('error', reject);
      res.once('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.end(payload);
  });
}

/** A REST call with the API token; JSON in, JSON out; a non-2xx answer throws with the API's message. */
export async function restJson<T>(
  target: { url: string; ca: string; apiToken: string },
  method: string,
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<T> {
  const res = await httpsRequest(`${target.url}${path}`, {
    ca: target.ca,
    method,
    headers: {
      authorization: `Bearer ${target.apiToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    timeoutMs,
  });
  if (res.status < 200 || res.status > 299) {
    let message = res.text.slice(0, 300);
    try {
      const e = JSON.parse(res.text) as { message?: string; code?: string };
      message = `${e.message ?? message}${e.code ? ` (${e.code})` : ''}`;
    } catch {
      // not the API's JSON error body
    }
    throw new Error(`${method} ${path}: ${res.status} ${message}`);
  }
  return JSON.parse(res.text) as T;
}
