// Real controller and agent processes for tests, started from the built CLI and
// stopped by their own PIDs. Every helper is bounded in time.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from './scratch.js';
import { httpsFetch } from './tls.js';

export const CLI = fileURLToPath(new URL('../../packages/cli/dist/main.js', import.meta.url));

export interface Daemon {
  child: ChildProcess;
  pid: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

/** `wrap`: a command that execs the daemon, e.g. unshare(1) into a mount namespace of the test's. */
export function spawnDaemon(args: string[], env: NodeJS.ProcessEnv = {}, wrap: string[] = []): Daemon {
  const [command, ...before] = [...wrap, process.execPath];
  const child = spawn(command, [...before, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    }),
  );
  return {
    child,
    pid: child.pid!,
    output: () => out,
    exited,
    async stop(signal = 'SIGTERM', graceMs = 5000) {
      if (!running) return;
      child.kill(signal);
      const t = setTimeout(() => running && child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Polls probe until it returns a value; every wait is bounded and says what it waited for. */
export async function waitUntil<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message ?? String(lastError)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface ControllerHandle extends Daemon {
  /** https://127.0.0.1:PORT: the controller speaks TLS only. */
  url: string;
  dataDir: string;
  apiToken: string;
  /** The CA clients trust (PEM), its file, and its pin as `rankd join-command` prints it. */
  ca: string;
  caFile: string;
  caHash: string;
  /** A join token minted for this test run (many uses, 24 h): agents started by startAgent enroll with it. */
  joinToken: string;
  /** What points the CLI at this controller (RANKD_URL, RANKD_TOKEN, RANKD_CA). */
  clientEnv: NodeJS.ProcessEnv;
  api<T = unknown>(
    path: string,
    init?: { method?: string; body?: unknown; token?: string | null },
  ): Promise<{ status: number; body: T }>;
}

/** Starts `rankd controller` on a free loopback port (or a given one) and waits until it listens. */
export async function startController(
  opts: { dataDir?: string; port?: number; heartbeatMs?: number; restartGraceMs?: number; extra?: string[] } = {},
): Promise<ControllerHandle> {
  const dataDir = opts.dataDir ?? scratchDir('rankd-ctl-');
  const stateFile = join(dataDir, 'controller.json');
  rmSync(stateFile, { force: true });
  const args = ['controller', '--listen', `127.0.0.1:${opts.port ?? 0}`, '--data-dir', dataDir];
  if (opts.heartbeatMs) args.push('--heartbeat-ms', String(opts.heartbeatMs));
  if (opts.restartGraceMs) args.push('--restart-grace-ms', String(opts.restartGraceMs));
  args.push(...(opts.extra ?? []));
  const daemon = spawnDaemon(args);
  let state: { url: string; ca: string; caHash: string };
  try {
    state = await waitUntil('controller.json', 60_000, () => {
      if (daemon.child.exitCode !== null) throw new Error(`controller exited: ${daemon.output()}`);
      try {
        return JSON.parse(readFileSync(stateFile, 'utf8')) as { url: string; ca: string; caHash: string };
      } catch {
        return undefined;
      }
    });
  } catch (err) {
    // never leave a daemon behind: its pipes would keep the test process alive
    await daemon.stop('SIGKILL');
    throw err;
  }
  const apiToken = readFileSync(join(dataDir, 'api-token'), 'utf8').trim();
  const { url } = state;
  const ca = readFileSync(state.ca, 'utf8');
  async function api<T>(path: string, init: { method?: string; body?: unknown; token?: string | null } = {}) {
    const token = init.token === undefined ? apiToken : init.token;
    const res = await httpsFetch(url + path, {
      ca,
      method: init.method ?? 'GET',
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined
        ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }
        : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // leave as text
    }
    return { status: res.status, body: body as T };
  }
  let joinToken: string;
  try {
    const minted = await api<{ token: string }>('/v1/join-tokens', {
      method: 'POST',
      body: { ttlSeconds: 86_400, uses: 100_000, description: 'test helpers' },
    });
    if (minted.status !== 200) throw new Error(`minting a join token: ${minted.status} ${JSON.stringify(minted.body)}`);
    joinToken = minted.body.token;
  } catch (err) {
    await daemon.stop('SIGKILL');
    throw err;
  }
  return {
    ...daemon,
    url,
    dataDir,
    apiToken,
    ca,
    caFile: state.ca,
    caHash: state.caHash,
    joinToken,
    clientEnv: { RANKD_URL: url, RANKD_TOKEN: apiToken, RANKD_CA: state.ca },
    api,
  };
}

/** The controller fields an agent needs to enroll and connect. */
export interface AgentTarget {
  url: string;
  joinToken: string;
  caHash: string;
  dataDir: string;
}

/** Where an agent of this controller keeps its identity unless told: one per node name, so a restarted agent is the same node. */
export function agentStateDir(controller: { dataDir: string }, name: string): string {
  return join(controller.dataDir, 'agent-state', name);
}

/** Starts `rankd agent`: it enrolls with the controller's test join token (pinning its CA hash) unless its state dir already holds a certificate. */
export function startAgent(
  controller: AgentTarget,
  opts: {
    name: string;
    labels?: string[];
    root?: string;
    spoolDir?: string;
    stateDir?: string;
    extra?: string[];
    wrap?: string[];
  },
): Daemon {
  const stateDir = opts.stateDir ?? agentStateDir(controller, opts.name);
  const args = [
    'agent',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--state-dir',
    stateDir,
    '--name',
    opts.name,
    '--config',
    '/dev/null',
  ];
  // tests run ranks as whoever runs the tests (root in CI)
  if (process.getuid?.() === 0) args.push('--allow-root');
  for (const l of opts.labels ?? []) args.push('--label', l);
  if (opts.root) args.push('--root', opts.root);
  args.push('--spool-dir', opts.spoolDir ?? scratchDir('rankd-spool-'));
  args.push(...(opts.extra ?? []));
  // short reconnect backoff keeps restart tests quick; the token goes by environment, off the command line
  return spawnDaemon(args, { RANKD_RECONNECT_MAX_MS: '500', RANKD_JOIN_TOKEN: controller.joinToken }, opts.wrap);
}

export interface NodeViewLike {
  name: string;
  state: string;
  connected: boolean;
  firstSeen: string;
  lastSeen: string;
  cpus: number | null;
  numaNodes: number | null;
  address: string | null;
  labels: Record<string, string>;
}

export async function waitForNode(
  controller: ControllerHandle,
  name: string,
  state: string,
  timeoutMs = 15_000,
): Promise<NodeViewLike> {
  return waitUntil(`node ${name} ${state}`, timeoutMs, async () => {
    const { status, body } = await controller.api<{ nodes: NodeViewLike[] }>('/v1/nodes');
    if (status !== 200) return undefined;
    const node = body.nodes.find((n) => n.name === name);
    return node && node.state === state && (state !== 'ready' || node.connected) ? node : undefined;
  });
}

/** Runs the CLI to completion and returns its exit code and output. */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runCliRaw(args, env, timeoutMs);
  return { code: r.code, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
}

/** runCli with the output as bytes (decoded once at the end, if at all: a chunk may split a character). */
export function runCliRaw(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: Buffer; stderr: Buffer }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => stdout.push(d));
    child.stderr.on('data', (d: Buffer) => stderr.push(d));
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rankd ${args.join(' ')} timed out; stderr: ${Buffer.concat(stderr).toString()}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) });
    });
  });
}
