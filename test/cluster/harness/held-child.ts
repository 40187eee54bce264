// The harness tests' way to leave a harness half-done on purpose: a script of this folder
// (hold-network.ts, hold-slurm.ts) sets something up in a process of its own, prints what it
// holds as one JSON line, and waits; the test then interrupts or kills it and checks what
// is left, or what the next run ends of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { basename } from 'node:path';
import type { Test } from 'tap';

/** Starts `script` with `args` (tap's own loader flags first) and resolves with its first stdout line, parsed. */
export function heldByChild<Held>(
  t: Test,
  script: string,
  args: string[],
): Promise<{ child: ChildProcess; held: Held }> {
  const child = spawn(process.execPath, [...process.execArgv, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ child, held: JSON.parse(out.slice(0, nl)) as Held });
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`${basename(script, '.ts')} exited early (${code ?? signal}): ${err}`)),
    );
  });
}
