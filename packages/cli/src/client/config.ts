// Where client commands find the controller: RANKD_URL/RANKD_TOKEN/RANKD_CA, else the file
// `rankd up` writes (~/.rankd/config.json). `ca` is the file of the CA certificate the
// controller is verified against (without it, the system's roots). The URL must be
// https://: the bearer token is never offered to a connection that is not TLS.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '@rankd/protocol/errors';
import { CliError, ExitCode } from '../exit-codes.js';

export interface ClientConfig {
  url: string;
  token: string;
  /** Path of the CA certificate (PEM) to verify the controller against. */
  ca?: string;
}

export function rankdHome(env: NodeJS.ProcessEnv = process.env): string {
  return env['RANKD_HOME'] ?? join(homedir(), '.rankd');
}

export function clientConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(rankdHome(env), 'config.json');
}

export function loadClientConfig(env: NodeJS.ProcessEnv = process.env): ClientConfig {
  // an empty variable is an unset one (`RANKD_URL= rankd …` falls back to the file)
  const fromEnv = { url: env['RANKD_URL'] || undefined, token: env['RANKD_TOKEN'] || undefined };
  let fromFile: Partial<ClientConfig> = {};
  const path = clientConfigPath(env);
  if (!fromEnv.url || !fromEnv.token) {
    try {
      fromFile = JSON.parse(readFileSync(path, 'utf8')) as Partial<ClientConfig>;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new CliError(`cannot read ${path}: ${(err as Error).message}`, ExitCode.Software);
    }
  }
  const url = fromEnv.url ?? fromFile.url;
  const token = fromEnv.token ?? fromFile.token;
  const ca = env['RANKD_CA'] ?? (fromEnv.url ? undefined : fromFile.ca);
  if (!url || !token) {
    throw new CliError(
      `no controller configured: set RANKD_URL and RANKD_TOKEN, or run "rankd up" (which writes ${path})`,
      ExitCode.Usage,
    );
  }
  const where = fromEnv.url ? 'RANKD_URL' : `"url" in ${path}`;
  return { url: httpsUrl(url, where), token, ...(ca ? { ca } : {}) };
}

/** The controller URL without trailing slashes, or a usage error (RANKD_INSECURE_URL) unless it is https://. */
export function httpsUrl(url: string, where: string): string {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new CliError(`${where} is not a URL: "${url.slice(0, 200)}" (${ErrorCode.InsecureUrl})`, ExitCode.Usage);
  }
  if (protocol !== 'https:') {
    throw new CliError(
      `${where} is ${url.slice(0, 200)}: the controller speaks https:// only, and rankd sends its token over nothing else (${ErrorCode.InsecureUrl})`,
      ExitCode.Usage,
    );
  }
  return url.replace(/\/+$/, '');
}
