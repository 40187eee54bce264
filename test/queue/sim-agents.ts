// Simulated agents for the queue's property test: bench/rankd/agent-sim.ts, the program the
// scale figures use. Each is an enrolled node speaking the real protocol over mTLS, with
// the facts of a generated topology (SIM_ROOT); its "ranks" are `sleep S` that exit after
// S seconds (SIM_SLEEP_RANKS). Real agents cannot stand in here: they would bind ranks to
// the generated machines' CPUs, which this 2-CPU host does not have.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Test } from 'tap';
import { waitUntil, type ControllerHandle } from '../helpers/daemons.js';

const SIM = fileURLToPath(new URL('../../bench/dist/rankd/agent-sim.js', import.meta.url));

/** Starts COUNT simulated nodes PREFIX-0 … with the facts under `root` (and more `env`); resolves once they are enrolled and told to connect. */
export async function startSimAgents(
  t: Test,
  controller: ControllerHandle,
  root: string,
  count: number,
  prefix: string,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [SIM, controller.url, controller.caHash, String(count), prefix], {
    env: { ...process.env, SIM_JOIN_TOKEN: controller.joinToken, SIM_ROOT: root, SIM_SLEEP_RANKS: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGTERM');
  });
  const events: Array<{ event: string; message?: string }> = [];
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => events.push(JSON.parse(line) as { event: string }));
  await waitUntil(`${prefix} simulated agents to enroll`, 60_000, () => {
    if (child.exitCode !== null) throw new Error(`agent-sim exited ${child.exitCode}: ${stderr}`);
    const error = events.find((e) => e.event === 'error');
    if (error) throw new Error(`agent-sim: ${error.message}`);
    return events.some((e) => e.event === 'enrolled');
  });
  child.stdin.write(JSON.stringify({ cmd: 'connect' }) + '\n');
  return child;
}
