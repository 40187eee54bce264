// Shared by the queue tests: a controller and one local agent (this machine's 2 cores),
// and readers of the queue, of jobs, and of the controller's event history (its SQLite
// file, read-only: the history is the record the properties are checked against).
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Test } from 'tap';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';

export interface QueueEntryLike {
  id: string;
  owner: string | null;
  state: string;
  reason: string;
  position: number | null;
  priority: number;
  held: { nodes: string[]; cpus: number; gpus: number } | null;
}

export interface JobLike {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  rankMap: { ranks: Array<{ node: string; cpus: number[] }> } | null;
}

export interface Solo {
  controller: ControllerHandle;
  env: NodeJS.ProcessEnv;
  submit(
    placement: Record<string, unknown>,
    command?: string[],
    extra?: Record<string, unknown>,
  ): Promise<{ status: number; body: JobLike & { message?: string; code?: string } }>;
  job(id: string): Promise<JobLike>;
  queue(): Promise<QueueEntryLike[]>;
  waitState(id: string, states: string[], timeoutMs?: number): Promise<JobLike>;
  cli(args: string[], timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** A controller (with `extra` flags) and one agent named solo; torn down with the test. */
export async function solo(t: Test, extra: string[] = []): Promise<Solo> {
  const controller = await startController({ extra });
  t.teardown(() => controller.stop());
  const agent = startAgent(controller, { name: 'solo' });
  t.teardown(() => agent.stop());
  await waitForNode(controller, 'solo', 'ready');
  return soloOn(controller);
}

export function soloOn(controller: ControllerHandle): Solo {
  const env = { ...controller.clientEnv, RANKD_HOME: controller.dataDir };
  const job = async (id: string) => (await controller.api<JobLike>(`/v1/jobs/${id}`)).body;
  return {
    controller,
    env,
    submit: (placement, command = ['sleep', '30'], extra = {}) =>
      controller.api('/v1/jobs', { method: 'POST', body: { command, cwd: '/tmp', placement, ...extra } }),
    job,
    queue: async () => (await controller.api<{ jobs: QueueEntryLike[] }>('/v1/queue')).body.jobs,
    waitState: (id, states, timeoutMs = 20_000) =>
      waitUntil(`job ${id} to be ${states.join('/')}`, timeoutMs, async () => {
        const v = await job(id);
        return states.includes(v.state) ? v : undefined;
      }),
    cli: (args, timeoutMs = 60_000) => runCli(args, env, timeoutMs),
  };
}

export interface EventRow {
  id: number;
  kind: string;
  subject: string;
  data: Record<string, unknown>;
}

/** The controller's event history, in order. */
export function history(controller: { dataDir: string }): EventRow[] {
  const db = new Database(join(controller.dataDir, 'rankd.db'), { readonly: true, fileMustExist: true });
  try {
    return (
      db.prepare('SELECT id, kind, subject, data FROM events ORDER BY id').all() as Array<
        Omit<EventRow, 'data'> & { data: string }
      >
    ).map((r) => ({
      ...r,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  } finally {
    db.close();
  }
}

/** The order in which jobs got their allocations. */
export function allocationOrder(controller: { dataDir: string }): string[] {
  return history(controller)
    .filter((e) => e.kind === 'job.allocated')
    .map((e) => e.subject);
}

export { allocationOverlaps as overlaps } from '../helpers/allocations.js';
