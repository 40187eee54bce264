// A controller and N local agents as real processes, torn down by PID.
import { readFileSync, readdirSync } from 'node:fs';
import type { Test } from 'tap';
import { startAgent, startController, waitForNode, type ControllerHandle, type Daemon } from './daemons.js';

export interface LocalCluster {
  controller: ControllerHandle;
  agents: Daemon[];
  /** Environment that points the CLI at this controller. */
  env: NodeJS.ProcessEnv;
}

export async function localCluster(
  t: Test,
  names: string[],
  opts: { heartbeatMs?: number } = {},
): Promise<LocalCluster> {
  const controller = await startController(opts);
  t.teardown(() => controller.stop());
  const agents = names.map((name) => {
    const agent = startAgent(controller, { name });
    t.teardown(() => agent.stop());
    return agent;
  });
  for (const name of names) await waitForNode(controller, name, 'ready');
  return { controller, agents, env: { ...controller.clientEnv, RANKD_HOME: controller.dataDir } };
}

/** True while /proc/<pid> exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Pids of every live (non-zombie) process whose process group is pgid. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] = state, fields[2] = pgrp
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) out.push(Number(entry));
    } catch {
      // the process went away while we looked
    }
  }
  return out;
}
