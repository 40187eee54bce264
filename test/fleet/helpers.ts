// A controller and named agents as real processes for the fleet tests; agents may read
// generated sysfs trees (`root`) so that the doctor sees machines this host is not.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  type ControllerHandle,
  type Daemon,
} from '../helpers/daemons.js';

export interface AgentSpec {
  name: string;
  /** A generated sysfs/procfs tree the agent reads its facts from. */
  root?: string;
  extra?: string[];
  /** A command that execs the agent (see spawnDaemon). */
  wrap?: string[];
}

export interface FleetUnderTest {
  controller: ControllerHandle;
  agents: Map<string, Daemon>;
  env: NodeJS.ProcessEnv;
  cli(args: string[], timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Writes `text` to a file in the controller's data dir and imports it with `rankd inventory import`. */
  importInventory(
    name: string,
    text: string,
    extra?: string[],
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export async function fleetUnderTest(t: Test, specs: ReadonlyArray<string | AgentSpec>): Promise<FleetUnderTest> {
  const controller = await startController();
  t.teardown(() => controller.stop());
  const agents = new Map<string, Daemon>();
  for (const spec of specs) {
    const s = typeof spec === 'string' ? { name: spec } : spec;
    const agent = startAgent(controller, {
      name: s.name,
      ...(s.root ? { root: s.root } : {}),
      ...(s.extra ? { extra: s.extra } : {}),
      ...(s.wrap ? { wrap: s.wrap } : {}),
    });
    agents.set(s.name, agent);
    t.teardown(() => agent.stop());
  }
  // generous: a loaded CI machine starts many agents slowly
  for (const name of agents.keys()) await waitForNode(controller, name, 'ready', 60_000);
  const env = { ...controller.clientEnv, RANKD_HOME: controller.dataDir };
  const cli = (args: string[], timeoutMs = 60_000) => runCli(args, env, timeoutMs);
  return {
    controller,
    agents,
    env,
    cli,
    async importInventory(name, text, extra = []) {
      const file = join(controller.dataDir, name);
      writeFileSync(file, text);
      return cli(['inventory', 'import', file, ...extra]);
    },
  };
}
