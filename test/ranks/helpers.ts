// Shared by the rank tests: a fresh spool per test, and the /proc checks that prove a
// process is gone. Everything here touches only processes the tests started.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { RankRunner, type RankLaunch, type RankRunnerOptions } from '#agent/ranks/index';

export const PATH_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

export function tmpSpool(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-ranks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A runner on a fresh spool that aborts and forgets every job it ran when the test ends. */
export function runner(t: Test, opts: Partial<RankRunnerOptions> = {}): RankRunner {
  const r = new RankRunner({ spoolDir: tmpSpool(t), allowRoot: true, ...opts });
  t.teardown(async () => {
    for (const jobId of new Set(r.list().map((i) => i.jobId))) {
      await r.abortJob(jobId, 0);
      r.forget(jobId);
    }
    r.close();
  });
  return r;
}

export function launch(jobId: string, rank: number, argv: string[], extra: Partial<RankLaunch> = {}): RankLaunch {
  return { jobId, rank, argv, env: { ...PATH_ENV }, cpus: [], memNodes: [], ...extra };
}

/** True when the pid is a live process; a zombie is dead and reaped by whoever owns it. */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!);
  } catch {
    return false;
  }
}

/** True while any process, zombies included, is in the process group. */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function until(cond: () => boolean, what: string, limitMs = 10_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function readSpoolFile(r: RankRunner, jobId: string, rank: number, name: string): string {
  return fs.readFileSync(path.join(r.spool.rankDir(jobId, rank), name), 'utf8');
}

export function hasTool(name: string): boolean {
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .concat('/usr/bin', '/usr/sbin')
    .some((d) => {
      try {
        fs.accessSync(path.join(d, name), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

export function allowedCpus(): number[] {
  const line = fs
    .readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Cpus_allowed_list:'))!;
  const out: number[] = [];
  for (const part of line.split(':')[1]!.trim().split(',')) {
    const [lo, hi] = part.split('-').map(Number);
    for (let c = lo!; c <= (hi ?? lo!); c++) out.push(c);
  }
  return out;
}
