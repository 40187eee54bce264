// Starts that cannot happen fail with a stable code and leave nothing behind; a rank run
// as another user has exactly that user's identity.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { RankRunner, type RankLaunch } from '#agent/ranks/index';
import { launch, readSpoolFile, runner, tmpSpool } from './helpers.js';

const isRoot = process.getuid?.() === 0;

async function refused(t: Test, r: RankRunner, l: RankLaunch, code: string, what: string): Promise<void> {
  await t.rejects(r.start(l), { code }, what);
  t.notOk(fs.existsSync(r.spool.rankDir(l.jobId, l.rank)), `${what}: no spool directory left`);
}

t.test('missing programs', async (t) => {
  const r = runner(t);
  await refused(t, r, launch('e', 0, ['rankd-no-such-program']), 'RANKD_RANK_PROGRAM_NOT_FOUND', 'not on PATH');
  await t.rejects(
    r.start(launch('e', 0, ['rankd-no-such-program'])),
    { message: 'rankd-no-such-program: command not found' },
    "in bash's words",
  );
  await refused(t, r, launch('e', 0, ['/nonexistent/program']), 'RANKD_RANK_PROGRAM_NOT_FOUND', 'absolute path');
  await t.rejects(
    r.start(launch('e', 0, ['/nonexistent/program'])),
    { message: '/nonexistent/program: No such file or directory' },
    "a path, in bash's words",
  );
  await refused(
    t,
    r,
    launch('e', 0, ['sh'], { env: { PATH: '/nonexistent' } }),
    'RANKD_RANK_PROGRAM_NOT_FOUND',
    "looked up on the rank's PATH",
  );
  t.same(r.list(), []);
});

t.test('programs that are there but cannot be executed', async (t) => {
  const r = runner(t);
  const dir = tmpSpool(t);
  const plain = path.join(dir, 'plain-file');
  fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
  await refused(t, r, launch('e', 0, [plain]), 'RANKD_RANK_PROGRAM_NOT_EXECUTABLE', 'no execute permission');
  await t.rejects(r.start(launch('e', 0, [plain])), { message: `${plain}: Permission denied` }, "in bash's words");
  await refused(t, r, launch('e', 0, [dir]), 'RANKD_RANK_PROGRAM_NOT_EXECUTABLE', 'a directory');
  await t.rejects(r.start(launch('e', 0, [dir])), { message: `${dir}: Is a directory` });
  // as bash: a file of that name on the PATH without execute permission is reported, not "not found"
  await refused(
    t,
    r,
    launch('e', 0, ['plain-file'], { env: { PATH: dir } }),
    'RANKD_RANK_PROGRAM_NOT_EXECUTABLE',
    'on the PATH without execute permission',
  );
  await t.rejects(r.start(launch('e', 0, ['plain-file'], { env: { PATH: dir } })), {
    message: 'plain-file: Permission denied',
  });
  t.same(r.list(), []);
});

t.test('malformed launches', async (t) => {
  const r = runner(t);
  const bad: [string, Partial<RankLaunch>][] = [
    ['job id climbing out of the spool', { jobId: '../x' }],
    ['empty argv', { argv: [] }],
    ['argv[0] that looks like an option', { argv: ['-c'] }],
    ['env name with =', { env: { 'A=B': '1' } }],
    ['duplicate cpu', { cpus: [0, 0] }],
    ['negative rank', { rank: -1 }],
    ['relative cwd', { cwd: 'tmp' }],
    ['user with a space', { user: 'a b' }],
  ];
  for (const [what, patch] of bad)
    await t.rejects(r.start({ ...launch('m', 0, ['true']), ...patch }), { code: 'RANKD_RANK_BAD_LAUNCH' }, what);
});

t.test('bad working directories', async (t) => {
  const r = runner(t);
  await refused(t, r, launch('cwd', 0, ['true'], { cwd: '/nonexistent-rankd-dir' }), 'RANKD_RANK_BAD_CWD', 'missing');
  await refused(t, r, launch('cwd', 0, ['true'], { cwd: '/proc/self/status' }), 'RANKD_RANK_BAD_CWD', 'a file');
});

t.test('a rank cannot start twice', async (t) => {
  const r = runner(t);
  await r.start(launch('twice', 0, ['true']));
  await t.rejects(r.start(launch('twice', 0, ['true'])), { code: 'RANKD_RANK_EXISTS' });
});

t.test('users', { skip: isRoot ? false : 'the agent must be root to switch users' }, async (t) => {
  t.test('an unknown user', async (t) => {
    const r = runner(t);
    await refused(
      t,
      r,
      launch('u', 0, ['true'], { user: 'rankd-no-such-user' }),
      'RANKD_RANK_BAD_USER',
      'unknown user',
    );
  });

  t.test('root only when allowed', async (t) => {
    const r = new RankRunner({ spoolDir: tmpSpool(t) });
    await refused(t, r, launch('root', 0, ['true']), 'RANKD_RANK_ROOT_NOT_ALLOWED', 'no user named, agent is root');
    await refused(t, r, launch('root', 0, ['true'], { user: 'root' }), 'RANKD_RANK_ROOT_NOT_ALLOWED', 'user root');
    await refused(t, r, launch('root', 0, ['true'], { user: '0' }), 'RANKD_RANK_ROOT_NOT_ALLOWED', 'uid 0');
  });

  t.test("a rank runs with exactly the user's identity", async (t) => {
    const r = new RankRunner({ spoolDir: tmpSpool(t) });
    t.teardown(() => r.close());
    await r.start(
      launch(
        'nobody',
        0,
        ['sh', '-c', 'grep -E "^(Uid|Gid|Groups):" /proc/self/status; echo "$HOME $USER $LOGNAME $SHELL"; pwd'],
        { user: 'nobody', env: { PATH: '/usr/bin:/bin', HOME: '/root', USER: 'root', SHELL: '/bin/bash' } },
      ),
    );
    t.match(await r.exited('nobody', 0), { outcome: 'exited', code: 0 });
    const out = readSpoolFile(r, 'nobody', 0, 'stdout').split('\n');
    const pw = fs
      .readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('nobody:'))!
      .split(':');
    const [uid, gid, home, shell] = [pw[2], pw[3], pw[5], pw[6]];
    t.equal(out[0], `Uid:\t${uid}\t${uid}\t${uid}\t${uid}`, 'real, effective, saved and fs uid');
    t.equal(out[1], `Gid:\t${gid}\t${gid}\t${gid}\t${gid}`, 'real, effective, saved and fs gid');
    t.equal(out[2]!.replace(/\s+$/, ''), `Groups:\t${gid}`, "root's groups are gone");
    t.equal(out[3], `${home} nobody nobody ${shell}`, 'HOME, USER, LOGNAME and SHELL follow the user');
    t.equal(out[4], fs.existsSync(home!) ? home : '/', 'cwd defaults to the home, or / without one');
    r.forget('nobody');
  });

  t.test("a rank of the agent's own user (no user named) gets that user's identity too", async (t) => {
    const r = runner(t);
    await r.start(
      launch('self', 0, ['sh', '-c', 'echo "$HOME $USER $LOGNAME $SHELL"'], {
        env: { PATH: '/usr/bin:/bin', HOME: '/home/alice', USER: 'alice' },
      }),
    );
    t.match(await r.exited('self', 0), { outcome: 'exited', code: 0 });
    const me = os.userInfo();
    t.equal(
      readSpoolFile(r, 'self', 0, 'stdout'),
      `${me.homedir} ${me.username} ${me.username} ${me.shell}\n`,
      "the agent's environment is not inherited, so the agent sets them from passwd",
    );
  });

  t.test('a directory the user may not enter is refused by the supervisor', async (t) => {
    const r = new RankRunner({ spoolDir: tmpSpool(t) });
    const secret = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-secret-'));
    fs.chmodSync(secret, 0o700);
    t.teardown(() => fs.rmSync(secret, { recursive: true, force: true }));
    await refused(
      t,
      r,
      launch('deny', 0, ['true'], { user: 'nobody', cwd: secret }),
      'RANKD_RANK_BAD_CWD',
      'cwd as the user',
    );
  });
});
