// `rankd up --demo`, which `npm start` runs: a controller and an agent under a fresh
// RANKD_HOME, the demo job's two pinned ranks agreeing on π, the dashboard's sign-in URL,
// and a clean stop on Ctrl-C (SIGINT) with both daemons gone.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CLI, waitUntil } from '../helpers/daemons.js';
import { scratchDir } from '../helpers/scratch.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('rankd up --demo runs the demo job, prints the dashboard URL and stops on Ctrl-C', async (t) => {
  const home = scratchDir('rankd-up-');
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'up', '--demo', '--listen', `127.0.0.1:${port}`, '--name', 'upnode'], {
    env: { ...process.env, RANKD_HOME: home, RANKD_URL: '', RANKD_TOKEN: '', RANKD_CA: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => void (child.exitCode === null && child.kill('SIGKILL')));

  await waitUntil('the demo job to end', 90_000, () => {
    if (child.exitCode !== null) throw new Error(`rankd up exited ${child.exitCode}: ${err}`);
    return err.includes('demo job exited') || undefined;
  });
  t.match(err, /demo job exited 0/);
  t.match(out, /0: rank 0: allreduce → π ≈ 3\.14159265/);
  t.match(out, /1: rank 1: allreduce → π ≈ 3\.14159265/);
  t.match(err, new RegExp(`rankd: dashboard   https://127\\.0\\.0\\.1:${port}/ui/#login=[A-Za-z0-9_-]{43} `));
  const pids = [...err.matchAll(/\(pid (\d+),/g)].map((m) => Number(m[1]));
  t.equal(pids.length, 2, 'controller and agent pids are printed');
  t.ok(readFileSync(join(home, 'config.json'), 'utf8').includes(`127.0.0.1:${port}`), 'the client config points at it');

  child.kill('SIGINT');
  t.equal(await exited, 0, 'Ctrl-C is a clean stop');
  await waitUntil('both daemons gone', 10_000, () => pids.every((p) => !alive(p)));
  t.match(err, /stopping agent and controller/);
});
