// The rank supervisor's two Open MPI modes on their own, run as Open MPI runs them:
// `ompi-rank`, which orted starts for each rank and which becomes the rank's supervisor
// from the files the agent prepared, and `rsh`, mpirun's remote shell, which hands the
// orted's words to the agent's socket and exits with the daemon's status.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { HELPER_ENV } from '#agent/ranks/caller-env';
import { defaultSupervisorPath } from '#agent/ranks/supervisor-binary';
import { tmpSpool } from './helpers.js';

const BIN = defaultSupervisorPath();
// in CI a supervisor that was not built is a failure of the build, never a skip
const skip = fs.existsSync(BIN) || process.env.CI === 'true' ? false : `${BIN} is not built (npm run build)`;

const records = (env: Record<string, string>): string =>
  Object.entries(env)
    .map(([k, v]) => `${k}=${v}\0`)
    .join('');

/** A job directory with rank 0 prepared as openmpi-ranks.ts prepares it, running `script`. */
function prepared(t: Parameters<typeof tmpSpool>[0], script: (jobDir: string) => string) {
  const jobDir = tmpSpool(t);
  const dir = path.join(jobDir, '0');
  fs.mkdirSync(dir);
  const exec = [BIN, 'run', dir, '-', '-', '/tmp', '--', 'sh', '-c', script(jobDir)];
  fs.writeFileSync(path.join(dir, 'ompi-exec'), exec.join('\0'), { mode: 0o600 });
  // the submitter exported an OMPI_ variable of its own: Open MPI's wins over it
  fs.writeFileSync(
    path.join(dir, 'ompi-inherited'),
    records({ PATH: '/usr/bin:/bin', OMPI_COMM_WORLD_SIZE: '99', KEEP: 'inherited' }),
    { mode: 0o600 },
  );
  fs.writeFileSync(path.join(dir, 'ompi-env'), records({ RANK: '0', KEEP: 'planned', ODD: 'a=b\nc' }), { mode: 0o600 });
  return { jobDir, dir };
}

/** orted's environment for the rank: Open MPI's variables over the agent-given orted environment. */
function ortedEnv(jobDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...HELPER_ENV,
    RANKD_OMPI_JOB_DIR: jobDir,
    OMPI_COMM_WORLD_RANK: '0',
    OMPI_COMM_WORLD_SIZE: '2',
    PMIX_RANK: '0',
    OPAL_PREFIX: '/usr',
    // orted's own, which reaches neither the supervisor (root until it switches) nor the rank
    ORTED_ONLY: 'x',
    ...extra,
  };
}

t.test(
  "ompi-rank becomes the rank supervisor in its own place, with Open MPI's variables between the inherited and the planned",
  { skip },
  async (t) => {
    const { jobDir, dir } = prepared(t, (job) => `env -0; tr "\\0" "\\n" < /proc/$PPID/environ > ${job}/sv-env`);
    const child = spawn(BIN, ['ompi-rank'], { env: ortedEnv(jobDir), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((r) => child.once('close', r));
    t.equal(code, 0, stderr);
    t.equal(stdout, '', 'the answer line goes nowhere: orted does not read it');
    const rank = JSON.parse(fs.readFileSync(path.join(dir, 'rank.json'), 'utf8')) as { supervisorPid: number };
    t.equal(rank.supervisorPid, child.pid, "orted's child is the supervisor itself (exec in place)");
    t.equal(
      fs.readFileSync(path.join(dir, 'exit.json'), 'utf8'),
      '{"code":0,"signal":null,"core":false,"leftover":false}\n',
    );
    const env = fs.readFileSync(path.join(dir, 'stdout'), 'utf8').split('\0').slice(0, -1).sort();
    const want = [
      'KEEP=planned',
      'OMPI_COMM_WORLD_RANK=0',
      'OMPI_COMM_WORLD_SIZE=2',
      'ODD=a=b\nc',
      'OPAL_PREFIX=/usr',
      'PATH=/usr/bin:/bin',
      'PMIX_RANK=0',
      'PWD=/tmp',
      'RANK=0',
    ];
    t.same(
      env,
      want.sort(),
      "inherited, then Open MPI's own over it, then the planned environment; nothing else of orted's",
    );
    const supervisorEnv = fs.readFileSync(path.join(jobDir, 'sv-env'), 'utf8').trim().split('\n').sort();
    t.same(
      supervisorEnv,
      ['LANG=C', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin'],
      'the supervisor itself runs with the fixed environment only',
    );
    t.same(
      fs.readdirSync(dir).filter((f) => f.startsWith('ompi-')),
      [],
      'the three files are read once and deleted',
    );
  },
);

t.test(
  'ompi-rank refuses what the agent did not prepare: a message for mpirun, exit 1, nothing started',
  { skip },
  async (t) => {
    const { jobDir, dir } = prepared(t, (job) => `touch ${job}/ran`);
    const cases: [string, Record<string, string>, string][] = [
      ['no rank', { OMPI_COMM_WORLD_RANK: '' }, 'OMPI_COMM_WORLD_RANK="" is not a rank number'],
      [
        'a rank that is not a number',
        { OMPI_COMM_WORLD_RANK: '../0' },
        'OMPI_COMM_WORLD_RANK="../0" is not a rank number',
      ],
      [
        'no job directory',
        { RANKD_OMPI_JOB_DIR: '' },
        'RANKD_OMPI_JOB_DIR is not set: this orted was not started by a rankd agent',
      ],
      [
        'a rank not planned here',
        { OMPI_COMM_WORLD_RANK: '1' },
        `rank 1 is not planned on this node (${jobDir}/1 is missing): Open MPI mapped it elsewhere than rankd's rank map`,
      ],
    ];
    for (const [what, env, message] of cases) {
      const r = spawnSync(BIN, ['ompi-rank'], { env: ortedEnv(jobDir, env), encoding: 'utf8' });
      t.equal(r.status, 1, `${what}: exit 1`);
      t.equal(r.stderr, `rankd (ompi-rank): ${message}\n`, `${what}: says why`);
    }
    const unset = spawnSync(BIN, ['ompi-rank'], {
      env: { ...HELPER_ENV, RANKD_OMPI_JOB_DIR: jobDir },
      encoding: 'utf8',
    });
    t.equal(unset.stderr, 'rankd (ompi-rank): OMPI_COMM_WORLD_RANK is not set: not started by Open MPI\n');
    t.notOk(fs.existsSync(path.join(jobDir, 'ran')), 'no program ran');
    t.same(fs.readdirSync(dir).sort(), ['ompi-env', 'ompi-exec', 'ompi-inherited'], 'the prepared files are untouched');
  },
);

/** A socket standing for the agent's rsh socket: records the request line, answers with `lines`. */
async function agentSocket(t: Parameters<typeof tmpSpool>[0], answer: (conn: net.Socket) => void) {
  const socket = path.join(tmpSpool(t), 'rsh.sock');
  const seen: string[] = [];
  const server = net.createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('data', (d: string) => {
      buf += d;
      if (!buf.includes('\n')) return;
      seen.push(buf);
      answer(conn);
    });
  });
  await new Promise<void>((r) => server.listen(socket, r));
  t.teardown(() => server.close());
  return { socket, seen };
}

function rsh(socket: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(BIN, ['rsh', ...args], {
      env: { ...HELPER_ENV, RANKD_OMPI_SOCKET: socket },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

const ORTED = ['orted', '-mca', 'ess', '"env"', '-mca', 'orte_hnp_uri', '"1.0;tcp://127.0.0.1:9"'];

t.test(
  "rsh hands HOST and the orted's words to the agent and exits with the daemon's status, as ssh would",
  { skip },
  async (t) => {
    const exits: [string, number][] = [
      ['exit 0', 0],
      ['exit 3', 3],
      ['exit 300', 255],
      ['exit 99999999999', 255],
    ];
    for (const [line, status] of exits) {
      const { socket, seen } = await agentSocket(t, (conn) => conn.end(`started 42\n${line}\n`));
      const r = await rsh(socket, ['host2', ...ORTED]);
      t.equal(r.code, status, `"${line}": exit ${status}`);
      t.equal(r.stderr, '');
      t.same(seen, [`host2\t${ORTED.join('\t')}\n`], 'one line: the host and each word, tab-separated');
    }
    const failed = await agentSocket(t, (conn) => conn.end('started 42\nfailed RANKD_ORTED_LAUNCH_INVALID: no\n'));
    t.same(await rsh(failed.socket, ['host2', ...ORTED]), {
      code: 255,
      stderr: 'rankd (rsh helper): daemon on host2: RANKD_ORTED_LAUNCH_INVALID: no\n',
    });
    const closed = await agentSocket(t, (conn) => conn.end('started 42\n'));
    t.same(await rsh(closed.socket, ['host2', ...ORTED]), {
      code: 255,
      stderr: 'rankd (rsh helper): the rankd agent closed the connection before the daemon on host2 ended\n',
    });
  },
);

t.test('rsh refuses what it cannot hand on whole, before it connects', { skip }, async (t) => {
  const { socket, seen } = await agentSocket(t, (conn) => conn.end('exit 0\n'));
  const cases: [string[], string][] = [
    [['host2'], 'usage: rank-supervisor rsh HOST ARG...'],
    [['host2', 'orted', 'a\tb'], 'a host or argument with a tab or newline'],
    [['host\n2', 'orted'], 'a host or argument with a tab or newline'],
  ];
  for (const [args, message] of cases)
    t.same(await rsh(socket, args), { code: 255, stderr: `rankd (rsh helper): ${message}\n` }, JSON.stringify(args));
  const unset = spawnSync(BIN, ['rsh', 'host2', 'orted'], { env: { ...HELPER_ENV }, encoding: 'utf8' });
  t.same(
    [unset.status, unset.stderr],
    [255, 'rankd (rsh helper): RANKD_OMPI_SOCKET is not set: not run by a rankd launcher\n'],
  );
  const nowhere = await rsh(path.join(tmpSpool(t), 'none.sock'), ['host2', 'orted']);
  t.match(nowhere, { code: 255, stderr: /^rankd \(rsh helper\): .*none\.sock: No such file or directory\n$/ });
  t.same(seen, [], 'the agent was never asked for a daemon');
});
