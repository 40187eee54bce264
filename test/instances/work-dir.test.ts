// The instance directory's rules (packages/cli/src/up/work-dir.ts), on real directories: the
// marker, the last daemon removes it, a directory rankd did not make is never removed whole,
// a stale subdirectory is cleared, a symlink is never followed out, and a directory another
// user owns or can write to is refused before anything is written into it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { isInstanceDaemon, isRankdProcess } from '#cli/up/daemon-pids';
import { agentSubdir, ensureWorkDir, freshSubdir, leaveWorkDir, newWorkDir } from '#cli/up/work-dir';

const isRoot = process.getuid?.() === 0;
const MARKER = '.rankd-instance';

function scratch(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-workdir-test-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A process whose argv looks like a rankd daemon's (node …/main.js …), ended at teardown. */
function fakeDaemon(t: Test, args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', '/opt/rankd/main.js', ...args], {
    stdio: 'ignore',
  });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  return child;
}

t.test('a new work directory is 0700 and marked; the last daemon to leave removes it', async (t) => {
  const work = path.join(scratch(t), 'rankd-1234');
  ensureWorkDir(work);
  t.equal(fs.statSync(work).mode & 0o777, 0o700);
  t.ok(fs.existsSync(path.join(work, MARKER)), 'marked as made by rankd');
  const agent = freshSubdir(agentSubdir(work, 'n1'));
  const controller = freshSubdir(path.join(work, 'controller'));
  fs.writeFileSync(path.join(work, 'config.json'), '{}');
  leaveWorkDir(work, agent);
  t.notOk(fs.existsSync(agent), "the agent's subdirectory is gone");
  t.ok(fs.existsSync(work), 'the controller is still there: the directory stays');
  leaveWorkDir(work, controller);
  t.notOk(fs.existsSync(work), 'the last daemon removed the whole directory, the client config with it');
});

t.test('newWorkDir (an agent without --work-dir) is marked, so its agent leaves nothing', async (t) => {
  const work = newWorkDir(path.join(scratch(t), 'rankd-agent-'));
  const own = freshSubdir(agentSubdir(work, 'n1'));
  leaveWorkDir(work, own);
  t.notOk(fs.existsSync(work));
});

t.test('a --work-dir rankd did not make is never removed whole, nor what the user keeps in it', async (t) => {
  const home = scratch(t);
  fs.chmodSync(home, 0o700);
  fs.writeFileSync(path.join(home, 'notes.txt'), 'mine');
  fs.mkdirSync(path.join(home, 'controller'));
  fs.writeFileSync(path.join(home, 'controller', 'thesis.tex'), 'mine too');
  ensureWorkDir(home);
  t.notOk(fs.existsSync(path.join(home, MARKER)), 'an existing directory is not marked');
  t.throws(() => freshSubdir(path.join(home, 'controller')), { code: 'RANKD_WORK_DIR_UNSAFE' });
  t.equal(
    fs.readFileSync(path.join(home, 'controller', 'thesis.tex'), 'utf8'),
    'mine too',
    "the user's controller/ stays",
  );
  const own = freshSubdir(agentSubdir(home, 'n1'));
  leaveWorkDir(home, own);
  t.notOk(fs.existsSync(own), "rankd's own subdirectory goes");
  t.equal(fs.readFileSync(path.join(home, 'notes.txt'), 'utf8'), 'mine', 'the directory and its files stay');
  // a caller passing a path that is not a daemon subdirectory of this work dir removes nothing
  leaveWorkDir(home, path.join(home, 'controller'));
  leaveWorkDir(home, path.join(home, 'notes.txt'));
  t.ok(fs.existsSync(path.join(home, 'notes.txt')));
  t.ok(fs.existsSync(path.join(home, 'controller', 'thesis.tex')));
});

t.test('freshSubdir clears what a killed daemon left, and refuses one a running daemon holds', async (t) => {
  const work = path.join(scratch(t), 'w');
  ensureWorkDir(work);
  const stale = agentSubdir(work, 'n1');
  fs.mkdirSync(path.join(stale, 'state'), { recursive: true });
  fs.writeFileSync(path.join(stale, 'state', 'node.key'), 'old');
  fs.writeFileSync(path.join(stale, '.rankd-daemon'), '999999999\n'); // no such pid
  freshSubdir(stale);
  t.same(fs.readdirSync(stale), ['.rankd-daemon'], 'emptied');
  t.equal(fs.readFileSync(path.join(stale, '.rankd-daemon'), 'utf8'), `${process.pid}\n`, 'now held by this process');

  const held = agentSubdir(work, 'n2');
  fs.mkdirSync(held);
  fs.writeFileSync(path.join(held, 'spool-file'), 'live');
  const daemon = fakeDaemon(t, ['agent', '--ephemeral']);
  fs.writeFileSync(path.join(held, '.rankd-daemon'), `${daemon.pid}\n`);
  t.throws(() => freshSubdir(held), { code: 'RANKD_WORK_DIR_IN_USE', message: new RegExp(`pid ${daemon.pid}`) });
  t.equal(fs.readFileSync(path.join(held, 'spool-file'), 'utf8'), 'live', "the running daemon's files stay");

  // a pid reused by something that is not rankd does not hold it
  const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => sleeper.kill('SIGKILL'));
  fs.writeFileSync(path.join(held, '.rankd-daemon'), `${sleeper.pid}\n`);
  freshSubdir(held);
  t.notOk(fs.existsSync(path.join(held, 'spool-file')));
});

t.test('a symlinked agent-NAME is removed, never followed out of the directory', async (t) => {
  const root = scratch(t);
  const work = path.join(root, 'w');
  ensureWorkDir(work);
  const outside = path.join(root, 'outside');
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'precious'), 'keep');
  const link = agentSubdir(work, 'n1');
  fs.symlinkSync(outside, link);
  const own = freshSubdir(link);
  t.notOk(fs.lstatSync(own).isSymbolicLink(), 'a real directory in its place');
  t.equal(fs.readFileSync(path.join(outside, 'precious'), 'utf8'), 'keep', 'the target is untouched');
  // and a link the last daemon finds is removed as a link
  fs.symlinkSync(outside, agentSubdir(work, 'n2'));
  fs.rmSync(agentSubdir(work, 'n2'));
  fs.symlinkSync(outside, path.join(work, 'logs'));
  leaveWorkDir(work, own);
  t.notOk(fs.existsSync(work), 'removed');
  t.equal(fs.readFileSync(path.join(outside, 'precious'), 'utf8'), 'keep', 'a link inside is not followed');
});

t.test('a work directory others can write to is refused, and nothing is written into it', async (t) => {
  const open = path.join(scratch(t), 'open');
  fs.mkdirSync(open);
  fs.chmodSync(open, 0o777);
  t.throws(() => ensureWorkDir(open), {
    code: 'RANKD_WORK_DIR_UNSAFE',
    message: /can be written by others \(mode 777\)/,
  });
  t.same(fs.readdirSync(open), []);
  const file = path.join(scratch(t), 'file');
  fs.writeFileSync(file, '');
  t.throws(() => ensureWorkDir(file), { code: 'RANKD_WORK_DIR_UNSAFE', message: /not a directory/ });
});

t.test(
  "another user's directory, or another user's symlink, at the path is refused",
  { skip: isRoot ? false : 'chown to another user needs root' },
  async (t) => {
    const root = scratch(t);
    fs.chmodSync(root, 0o755);
    const nobody = Number(fs.readFileSync('/etc/passwd', 'utf8').match(/^nobody:[^:]*:(\d+):/m)?.[1] ?? 65534);
    // what another user of the node could make before the job starts: /tmp/rankd-JOBID
    const planted = path.join(root, 'rankd-77');
    fs.mkdirSync(planted, { mode: 0o700 });
    fs.writeFileSync(path.join(planted, MARKER), '');
    fs.chownSync(planted, nobody, nobody);
    t.throws(() => ensureWorkDir(planted), {
      code: 'RANKD_WORK_DIR_UNSAFE',
      message: /belongs to uid \d+, not to you/,
    });
    t.same(fs.readdirSync(planted), [MARKER], 'nothing written into it');

    const mine = path.join(root, 'mine');
    fs.mkdirSync(mine, { mode: 0o700 });
    const link = path.join(root, 'rankd-78');
    fs.symlinkSync(mine, link);
    fs.lchownSync(link, nobody, nobody);
    t.throws(() => ensureWorkDir(link), { code: 'RANKD_WORK_DIR_UNSAFE', message: /is a symlink of uid/ });
    t.same(fs.readdirSync(mine), []);
    // the user's own symlink (a scratch path) is followed
    const own = path.join(root, 'own-link');
    fs.symlinkSync(mine, own);
    ensureWorkDir(own);
    t.same(fs.readdirSync(mine), [], 'used as it is, not marked');
  },
);

t.test('rankd down signals only daemons of its own instance, not a reused pid', async (t) => {
  const work = path.join(scratch(t), 'pods');
  const ours = fakeDaemon(t, ['agent', '--ephemeral', '--work-dir', work]);
  const other = fakeDaemon(t, ['agent', '--ephemeral', '--work-dir', work + '-other']);
  const service = fakeDaemon(t, ['agent', '--work-dir', work]);
  const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => sleeper.kill('SIGKILL'));
  await new Promise((r) => setTimeout(r, 200)); // the fakes' argv is in /proc once they exec
  t.ok(isInstanceDaemon(ours.pid!, work), 'an ephemeral daemon of this work dir');
  t.ok(isInstanceDaemon(ours.pid!, work + '/'), 'the same path written another way');
  t.notOk(isInstanceDaemon(other.pid!, work), "another instance's daemon");
  t.notOk(isInstanceDaemon(service.pid!, work), 'not an ephemeral one');
  t.notOk(isRankdProcess(sleeper.pid!), 'not rankd at all');
  t.notOk(isRankdProcess(999_999_999), 'no such pid');
});
