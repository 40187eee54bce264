// The threat model's "local Unix user on a node" (docs/security.md): a user of the node who
// is not the job's user must not read the job's environment, output or spool. A real agent
// creates its spool (the test hands it a path that does not exist yet, as a fresh node
// has), a real job runs as nobody with a secret in its environment and its output, and
// the Unix user daemon then tries every directory and file of the spool and the rank's
// /proc environ, through real processes running as daemon.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CLI, waitUntil } from '../helpers/daemons.js';
import { fleetUnderTest } from '../fleet/helpers.js';

const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0;
const skip = !isRoot
  ? 'running as two Unix users needs root (CI runs this as root)'
  : !hasSetpriv
    ? 'setpriv (util-linux) runs the local user here'
    : false;

const SECRET = `s3cr3t-${process.pid}`;

/** Runs argv as the Unix user daemon (uid 1), with no supplementary groups: the local user. */
function asDaemon(argv: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('setpriv', ['--reuid=daemon', '--regid=daemon', '--clear-groups', '--', ...argv], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every path under `dir`, walked as root. */
function walk(dir: string): { dirs: string[]; files: string[] } {
  const out = { dirs: [dir], files: [] as string[] };
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      const sub = walk(p);
      out.dirs.push(...sub.dirs);
      out.files.push(...sub.files);
    } else if (e.isFile()) out.files.push(p);
  }
  return out;
}

t.test(
  'another local user reads nothing of a running job: not its spool, its output or its environment',
  { skip },
  async (t) => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-localuser-'));
    t.teardown(() => fs.rmSync(parent, { recursive: true, force: true }));
    // a world-searchable parent, as /var/lib is: only the agent's own modes stand in the way
    fs.chmodSync(parent, 0o755);
    const spool = path.join(parent, 'spool');
    const f = await fleetUnderTest(t, [{ name: 'lu1', extra: ['--spool-dir', spool] }]);

    const run = spawn(
      process.execPath,
      [
        CLI,
        'run',
        '-n',
        '1',
        '-q',
        '--user',
        'nobody',
        '--env',
        `RANKD_TEST_SECRET=${SECRET}`,
        '--',
        'sh',
        '-c',
        `echo ${SECRET}-out; echo ${SECRET}-err >&2; sleep 30`,
      ],
      {
        env: { ...process.env, ...f.env },
        stdio: 'ignore',
      },
    );
    t.teardown(() => {
      if (run.exitCode === null) run.kill('SIGINT');
    });
    const job = await waitUntil('the rank running with its output in the spool', 30_000, async () => {
      const r = await f.cli(['jobs', '--json']);
      const id = r.code === 0 ? (JSON.parse(r.stdout) as { jobs: Array<{ id: string }> }).jobs[0]?.id : undefined;
      if (!id) return undefined;
      const view = JSON.parse((await f.cli(['job', id, '--json'])).stdout) as {
        id: string;
        ranks: Array<{ state: string; pid: number | null }>;
      };
      const rank = view.ranks[0];
      if (rank?.state !== 'running' || !rank.pid) return undefined;
      const tree = walk(spool);
      const holds = tree.files.some((file) => fs.readFileSync(file, 'latin1').includes(`${SECRET}-out`));
      return holds ? { id: view.id, pid: rank.pid, tree } : undefined;
    });

    const { dirs, files } = job.tree;
    t.ok(files.length > 0, `the spool holds the rank's files (${files.length}), as root sees them`);
    for (const d of dirs) {
      const mode = fs.statSync(d).mode & 0o777;
      t.equal(mode & 0o077, 0, `${path.relative(parent, d)}: no access for group or others (mode ${mode.toString(8)})`);
    }
    const listed = asDaemon(['ls', spool]);
    t.not(listed.status, 0, 'daemon cannot list the spool');
    t.match(listed.stderr, /Permission denied/);
    for (const file of files) {
      const read = asDaemon(['cat', file]);
      t.not(read.status, 0, `daemon cannot read ${path.relative(spool, file)}`);
      t.notMatch(read.stdout, SECRET, 'and sees nothing of the secret');
    }
    const environ = asDaemon(['cat', `/proc/${job.pid}/environ`]);
    t.not(environ.status, 0, "daemon cannot read the rank's environment from /proc");
    t.notMatch(environ.stdout, SECRET);
    // the control: the rank does hold the secret, and root (the agent's side) can see it
    t.match(
      fs.readFileSync(`/proc/${job.pid}/environ`, 'latin1'),
      `RANKD_TEST_SECRET=${SECRET}`,
      'the rank does carry the secret (so the refusals above can fail)',
    );

    const cancelled = await f.cli(['cancel', job.id]);
    t.equal(cancelled.code, 0, cancelled.stderr);
  },
);
