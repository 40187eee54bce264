// What `rankd up --slurm` and `rankd up --pods` share once their daemons run: the client
// side of an instance. Its home directory (RANKD_HOME) holds the client config and the
// instance record that a second `up` attaches to and `rankd down` ends.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { pinnableCa } from '@rankd/protocol/ca-pin';
import type { ClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { ensureWorkDir } from './work-dir.js';

export interface InstanceRecord {
  kind: 'slurm' | 'pods';
  /** The Slurm job, for --slurm. */
  jobId?: string;
  /** The nodes it was started for, and those of them that were ready. */
  nodes: string[];
  ready: string[];
  url: string;
  /** Processes `rankd down` ends here: the daemons of pod 0. */
  pids?: number[];
  createdAt: string;
}

/** What `rankd controller --ready-json` prints once it listens. */
export interface ControllerReady {
  url: string;
  caHash: string;
  ca: string;
  apiToken: string;
  pid: number;
}

const RECORD = 'instance.json';

function writeAtomically(path: string, text: string): void {
  writeFileSync(path + '.tmp', text, { mode: 0o600 });
  renameSync(path + '.tmp', path);
}

/**
 * The ready line of a controller, from the file its stdout goes to, or undefined while it
 * has printed none. Only whole lines count (the line may be half written), and only a JSON
 * object with the fields of one: anything else on the step's stdout (a task prolog's output)
 * is not it. The CA must be the one the join secret derives: a controller that answered
 * with another one is not this instance's.
 */
export function readyLine(outFile: string, caHash: string): ControllerReady | undefined {
  let text: string;
  try {
    text = readFileSync(outFile, 'utf8');
  } catch {
    return undefined;
  }
  const ready = text
    .split('\n')
    .slice(0, -1)
    .map(readyOf)
    .find((r) => r !== null);
  if (!ready) return undefined;
  if (ready.caHash !== caHash || pinnableCa(ready.ca, 'the controller').hash !== caHash)
    throw new CliError(
      `the controller's CA ${ready.caHash} is not the join secret's ${caHash}: not this instance's controller`,
      ExitCode.Software,
    );
  return ready;
}

function readyOf(line: string): ControllerReady | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  const fields = ['url', 'caHash', 'ca', 'apiToken'] as const;
  if (typeof value !== 'object' || value === null) return null;
  const r = value as Record<string, unknown>;
  return fields.every((f) => typeof r[f] === 'string') && typeof r['pid'] === 'number'
    ? (r as unknown as ControllerReady)
    : null;
}

/**
 * Makes or checks the instance home (up/work-dir.ts) before anything in it is read or
 * written: an instance.json or config.json in a directory someone else controls is theirs.
 */
export function openInstanceHome(home: string): void {
  try {
    ensureWorkDir(home);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (!code?.startsWith('RANKD_')) throw err;
    throw new CliError(`${(err as Error).message} (${code})`, ExitCode.Usage);
  }
}

/** Writes the client config (config.json, ca.crt) and the instance record into the instance home. */
export function writeClientSide(home: string, ready: ControllerReady, record: InstanceRecord): ClientConfig {
  const caFile = join(home, 'ca.crt');
  writeAtomically(caFile, ready.ca);
  const client: ClientConfig = { url: ready.url, token: ready.apiToken, ca: caFile };
  writeAtomically(join(home, 'config.json'), JSON.stringify(client, null, 2) + '\n');
  writeAtomically(join(home, RECORD), JSON.stringify(record, null, 2) + '\n');
  return client;
}

export function readRecord(home: string): InstanceRecord | null {
  try {
    return JSON.parse(readFileSync(join(home, RECORD), 'utf8')) as InstanceRecord;
  } catch {
    return null;
  }
}

/** The running instance whose home this is, when its controller answers. */
export async function runningInstance(home: string): Promise<{ client: ClientConfig; record: InstanceRecord } | null> {
  if (!existsSync(home)) return null;
  openInstanceHome(home);
  const record = readRecord(home);
  if (!record || !existsSync(join(home, 'config.json'))) return null;
  const client = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8')) as ClientConfig;
  try {
    await call(client, 'GET /v1/nodes');
    return { client, record };
  } catch {
    return null;
  }
}

export interface NodesOutcome {
  ready: string[];
  missing: string[];
}

/** The nodes an instance waits for: the allocation's by name, or pods by their RANK label. */
export type Expected = { names: readonly string[] } | { pods: number };

/** The label each pod's agent carries: its RANK. */
export const POD_RANK_LABEL = 'pod-rank';

type ListedNode = { name: string; state: string; connected: boolean; labels: Record<string, string> };

function outcomeOf(expected: Expected, listed: readonly ListedNode[]): NodesOutcome {
  const up = listed.filter((n) => n.state === 'ready' && n.connected);
  if ('names' in expected) {
    const ready = new Set(up.map((n) => n.name));
    return { ready: expected.names.filter((n) => ready.has(n)), missing: expected.names.filter((n) => !ready.has(n)) };
  }
  const byRank = new Map(up.map((n) => [n.labels[POD_RANK_LABEL], n.name]));
  const ranks = Array.from({ length: expected.pods }, (_, i) => String(i));
  return {
    ready: ranks.filter((r) => byRank.has(r)).map((r) => byRank.get(r)!),
    missing: ranks.filter((r) => !byRank.has(r)).map((r) => `pod RANK=${r}`),
  };
}

/**
 * Waits until every expected node is ready and connected, or the time is up; `gone` names
 * a daemon that ended meanwhile (the wait is over then).
 */
export async function waitForNodes(
  client: ClientConfig,
  expected: Expected,
  timeoutMs: number,
  gone: () => string | null,
): Promise<NodesOutcome> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { nodes } = await call(client, 'GET /v1/nodes');
    const outcome = outcomeOf(expected, nodes);
    if (outcome.missing.length === 0 || Date.now() >= deadline) return outcome;
    const why = gone();
    if (why) throw new CliError(`${why} (RANKD_INSTANCE_GONE)`, ExitCode.Software);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Whether a start goes on with the nodes that came up: all of them, or with --allow-partial
 * some, which it then names on stderr. Otherwise it is refused, naming the missing ones and
 * `log`, which is kept only with --keep (the instance directory goes as the start is undone).
 */
export function goOnWith(
  outcome: NodesOutcome,
  flags: { allowPartial: boolean; keep: boolean; timeoutMs: number },
  log: string,
): void {
  const { missing } = outcome;
  if (missing.length === 0) return;
  if (!flags.allowPartial || outcome.ready.length === 0) {
    const see = flags.keep ? `see ${log}` : '--keep keeps the logs';
    throw new CliError(
      `${missing.join(', ')}: no agent ready within ${flags.timeoutMs / 1000} s ` +
        `(RANKD_NODES_NOT_READY); ${see}. --allow-partial goes on without ${missing.length === 1 ? 'it' : 'them'}`,
      ExitCode.Unreachable,
    );
  }
  process.stderr.write(`rankd: going on without ${missing.join(', ')} (--allow-partial)\n`);
}

/** The one line a shell evals: stdout holds nothing else. */
export function printExport(home: string): void {
  process.stdout.write(`export RANKD_HOME=${shellQuote(home)}\n`);
}

/**
 * The line after the export when `up --slurm --detach` runs in a batch script. At the script's
 * end the batch step SIGKILLs its processes, rankd's detached sruns among them, and the
 * shepherd of a killed srun then SIGKILLs its step: the daemons would never run their
 * clean-up. A trap on the script's EXIT ends the instance before that, unless it is gone.
 */
export function printEndTrap(home: string): void {
  const down = [process.execPath, process.argv[1]!, 'down'].map(shellQuote).join(' ');
  const ifUp = `[ ! -e ${shellQuote(join(home, RECORD))} ] || RANKD_HOME=${shellQuote(home)} ${down}`;
  process.stdout.write(`trap ${shellQuote(ifUp)} EXIT\n`);
  process.stderr.write(
    'rankd: in a batch script the instance ends with it (trap … EXIT: rankd down); ' +
      'a trap of your own on EXIT replaces it, so run "rankd down" there\n',
  );
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Runs the command of `rankd up … -- CMD` against the instance; resolves with its exit status as a shell reports it. */
export function runInside(home: string, command: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, RANKD_HOME: home },
    });
    child.once('error', (err) => {
      process.stderr.write(`rankd: cannot run ${command[0]}: ${err.message}\n`);
      resolve((err as NodeJS.ErrnoException).code === 'ENOENT' ? 127 : 126);
    });
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}
