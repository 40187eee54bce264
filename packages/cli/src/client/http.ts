// The REST client of the CLI. Maps transport and HTTP failures onto exit codes.
import { CliError, ExitCode } from '../exit-codes.js';
import type { ClientConfig } from './config.js';

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function request<T>(config: ClientConfig, path: string, options: RequestOptions = {}): Promise<T> {
  const res = await send(config, path, options);
  const text = await res.text();
  if (!res.ok) throw httpError(res.status, text);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Sends a request and returns the raw response (for streams); non-2xx still throws. */
export async function send(config: ClientConfig, path: string, options: RequestOptions = {}): Promise<Response> {
  const { method = 'GET', body, timeoutMs = 30_000 } = options;
  const signal = options.signal ?? AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(config.url + path, {
      method,
      headers: {
        ...options.headers,
        authorization: `Bearer ${config.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal,
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new CliError(`cannot reach the controller at ${config.url}: ${why}`, ExitCode.Unreachable);
  }
  if (!res.ok && options.signal) throw httpError(res.status, await res.text());
  return res;
}

function httpError(status: number, text: string): CliError {
  let message = text;
  try {
    const body = JSON.parse(text) as { code?: string; message?: string };
    message = body.code ? `${body.message} (${body.code})` : (body.message ?? text);
  } catch {
    // not JSON: keep the raw text
  }
  if (status === 401 || status === 403) return new CliError(`not authorized: ${message}`, ExitCode.Unauthorized);
  return new CliError(`controller answered ${status}: ${message}`, ExitCode.RemoteFailure);
}
