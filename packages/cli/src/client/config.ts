// Where client commands find the controller: RANKD_URL/RANKD_TOKEN/RANKD_CA, else the file
// `rankd up` writes (~/.rankd/config.json). `ca` is the file of the CA certificate the
// controller is verified against (without it, the system's roots).
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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
  const fromEnv = { url: env['RANKD_URL'], token: env['RANKD_TOKEN'] };
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
    throw new CliError(`no controller configured: set RANKD_URL and RANKD_TOKEN, or run "rankd up" (which writes ${path})`, ExitCode.Usage);
  }
  return { url: url.replace(/\/+$/, ''), token, ...(ca ? { ca } : {}) };
}
