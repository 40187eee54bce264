// Pods simulated on namespace hosts, for `rankd up --pods`: each "pod" is one `rankd up
// --pods` process in a host's network namespace, with the variables a PyTorchJob or RunAI's
// submit-dist gives a pod (MASTER_ADDR, RANK, WORLD_SIZE) and the pods' shared join secret.
// Here `rankd up --pods` starts the controller and the agents itself: nothing of
// startCluster's is used but the network.
//
// The hosts share the machine's filesystem, /tmp and hostname, so every pod gets a --name
// and a --work-dir of its own, all under one directory of the test's: a scan of /proc for
// that directory in command lines finds every rankd process the pods started.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { processAlive } from '../../helpers/cluster.js';
import { CLI } from './cluster.js';
import type { Namespace } from './network.js';
import { spawnInNetns, type NsProcess } from './ns-process.js';
import { registerCleanup } from './teardown.js';

export interface PodRig {
  /** Everything of this test's: the pods' work dirs, the secret files, the `rankd` shim. */
  dir: string;
  /** A `rankd` on PATH for the commands after `--` (the image of a real pod has one). */
  binDir: string;
  /** The pods' shared join secret, and a file (0600) that holds it, as a mounted Secret. */
  secret: string;
  secretFile: string;
  /** A file with another valid secret: a pod that was given the wrong Secret. */
  wrongSecretFile: string;
  workDir(name: string): string;
}

export function podRig(t: Test): PodRig {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-pods-test-'));
  const binDir = join(dir, 'bin');
  mkdirSync(binDir);
  writeFileSync(join(binDir, 'rankd'), `#!/bin/sh\nexec ${process.execPath} ${CLI} "$@"\n`, { mode: 0o755 });
  const secret = randomSecret();
  const secretFile = join(dir, 'join-secret');
  writeFileSync(secretFile, secret + '\n', { mode: 0o600 });
  const wrongSecretFile = join(dir, 'wrong-join-secret');
  writeFileSync(wrongSecretFile, randomSecret() + '\n', { mode: 0o600 });
  const unregister = registerCleanup(`pods test directory ${dir}`, () => {
    if (process.env['RANKD_CLUSTER_KEEP'] !== '1') rmSync(dir, { recursive: true, force: true });
  });
  t.teardown(() => {
    if (!t.passing()) {
      t.comment(`pods test directory kept: ${dir}`);
      return;
    }
    unregister();
  });
  return { dir, binDir, secret, secretFile, wrongSecretFile, workDir: (name) => join(dir, 'work', name) };
}

/** What `openssl rand -base64 32` gives: 44 characters. */
function randomSecret(): string {
  return randomBytes(32).toString('base64');
}

export interface PodSpec {
  host: Namespace;
  rank: number;
  worldSize: number;
  masterAddr: string;
  /** The secret as a mounted file (--join-secret-file), or as the pod spec's variable. */
  secretBy: 'file' | 'env';
  /** Default: the rig's secret file. */
  secretFile?: string;
  /** Flags after `up --pods --name podRANK --work-dir …` (e.g. --detach, --timeout 10s). */
  flags?: string[];
  /** The command after `--`, for pod 0. */
  command?: string[];
}

export interface Pod {
  name: string;
  spec: PodSpec;
  workDir: string;
  process: NsProcess;
}

/** Starts `rankd up --pods` as the pod of `spec.rank` on its host. */
export function startPod(rig: PodRig, spec: PodSpec): Pod {
  const name = `pod${spec.rank}`;
  const workDir = rig.workDir(name);
  const secretFile = spec.secretFile ?? rig.secretFile;
  const argv = [
    process.execPath,
    CLI,
    ...['up', '--pods', '--name', name, '--work-dir', workDir],
    ...(spec.secretBy === 'file' ? ['--join-secret-file', secretFile] : []),
    ...(spec.flags ?? []),
    ...(spec.command ? ['--', ...spec.command] : []),
  ];
  const env: NodeJS.ProcessEnv = {
    MASTER_ADDR: spec.masterAddr,
    RANK: String(spec.rank),
    WORLD_SIZE: String(spec.worldSize),
    PATH: `${rig.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
    ...(spec.secretBy === 'env' ? { RANKD_JOIN_SECRET: readFileSync(secretFile, 'utf8').trim() } : {}),
  };
  // the test process's own rankd settings are not the pod's
  for (const k of ['RANKD_HOME', 'RANKD_URL', 'RANKD_TOKEN', 'RANKD_CA', 'RANKD_JOIN_SECRET'])
    if (!(k in env)) env[k] = undefined;
  return { name, spec, workDir, process: spawnInNetns(spec.host.netns, argv, { env }) };
}

export interface RankdProcess {
  pid: number;
  cmdline: string;
}

/** Every process whose command line names a path under `dir`: the pods' daemons and their helpers. */
export function processesUnder(dir: string): RankdProcess[] {
  const found: RankdProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.includes(dir) && processAlive(Number(entry))) found.push({ pid: Number(entry), cmdline });
  }
  return found;
}

/**
 * Every process under `dir` seen while it runs, polled: which daemons the pods started, and
 * their pids. Each pid keeps the last command line seen: one caught between fork and exec
 * still shows its parent's (`up --pods … DIR`), and was once counted as that, not as an agent.
 */
export function watchProcesses(dir: string, everyMs = 200): { seen: Map<number, string>; stop(): void } {
  const seen = new Map<number, string>();
  const poll = () => {
    for (const p of processesUnder(dir)) seen.set(p.pid, p.cmdline);
  };
  poll();
  const timer = setInterval(poll, everyMs);
  return { seen, stop: () => clearInterval(timer) };
}
