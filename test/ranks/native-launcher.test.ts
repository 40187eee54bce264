// The rank supervisor (packages/agent/native) on its own, started as the agent starts it:
// its strict command line, exit records written exactly, byte for byte, the CPU affinity
// and memory policy it applies, its life past a SIGKILLed agent, and environment records
// with odd bytes passed through unchanged. Its Open MPI modes: test/ranks/ompi-modes.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HELPER_ENV } from '#agent/ranks/caller-env';
import { defaultSupervisorPath, expectedSupervisorVersion } from '#agent/ranks/supervisor-binary';
import { alive, allowedCpus, tmpSpool, until } from './helpers.js';

const BIN = defaultSupervisorPath();
// in CI a launcher that was not built is a failure of the build, never a skip
const skip = fs.existsSync(BIN) || process.env.CI === 'true' ? false : `${BIN} is not built (npm run build)`;
const NATIVE = [BIN];
const RECORDS = 'PATH=/usr/bin:/bin\0';

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A supervisor as the agent spawns it (own session, env records on stdin); resolves once it has exited. */
function supervise(cmd: string[], args: string[], records: Buffer | string = RECORDS): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd[0]!, [...cmd.slice(1), ...args], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...HELPER_ENV },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(records);
  });
}

function rankDir(t: Parameters<typeof tmpSpool>[0], name: string): string {
  const dir = path.join(tmpSpool(t), name);
  fs.mkdirSync(dir);
  return dir;
}

const read = (dir: string, name: string): string => fs.readFileSync(path.join(dir, name), 'utf8');

t.test('the command line is parsed strictly: a clear message and exit 2, nothing touched', { skip }, async (t) => {
  const dir = rankDir(t, 'usage');
  const tail = [dir, '-', '-', '/', '--', 'true'];
  const cases: [string[], RegExp][] = [
    [['run', '--cpus', '3-1', ...tail], /--cpus "3-1": range 3-1 runs backwards/],
    [['run', '--cpus', '1,,2', ...tail], /--cpus "1,,2": empty element/],
    [['run', '--cpus', '1,', ...tail], /--cpus "1,": empty element/],
    [['run', '--cpus', '', ...tail], /--cpus: empty list/],
    [['run', '--cpus', '0x1', ...tail], /--cpus "0x1": "0x1" is not a number or a range N-M/],
    [['run', '--cpus', '01', ...tail], /--cpus "01": "01" is not a number/],
    [['run', '--cpus', '-1', ...tail], /--cpus "-1": "-1" is not a number/],
    [['run', '--cpus', '2-', ...tail], /--cpus "2-": "2-" is not a number/],
    [['run', '--cpus', '1 2', ...tail], /--cpus "1 2": "1 2" is not a number/],
    [['run', '--cpus', '0-3,2', ...tail], /--cpus "0-3,2": elements must ascend without overlap \("2" after 3\)/],
    [['run', '--cpus', '4294967296', ...tail], /--cpus "4294967296": CPU 4294967296 is above 1048576/],
    [['run', '--mems', '1024', ...tail], /--mems "1024": NUMA node 1024 is above 1023/],
    [['run', '--cpus', '0', '--cpus', '1', ...tail], /--cpus given twice/],
    [['run', '--membind=0', ...tail], /unknown option "--membind=0"/],
    [['run', '-c', '0', ...tail], /unknown option "-c"/],
    [['run', dir, '-', '-', '/', 'true'], /missing "--" before the program's argv \(found "true"\)/],
    [['run', dir, '-', '-', '/', '--'], /no program after "--"/],
    [['run', dir, '-', '-'], /expected RANKDIR CGROUP\|- UID:GID:GROUPS\|- CWD/],
    [['start', ...tail], /unknown mode "start": expected run, exec, ompi-rank or rsh/],
    [[], /no mode/],
    [['run', dir, '-', 'root', '/', '--', 'true'], /user "root": expected UID:GID:G1,G2 or -/],
    [['run', dir, '-', '1000:x', '/', '--', 'true'], /user "1000:x": expected UID:GID:G1,G2 or -/],
    [['exec', '--cpus'], /--cpus needs a list/],
  ];
  for (const [args, message] of cases) {
    const r = await supervise(NATIVE, args);
    t.equal(r.code, 2, `${JSON.stringify(args)}: exit 2`);
    t.match(
      r.stderr,
      new RegExp(`^rank-supervisor: ${message.source}.*\\nusage: rank-supervisor run\\|exec`),
      `${JSON.stringify(args)}: says why`,
    );
    t.equal(r.stdout, '', 'no answer line');
  }
  t.same(fs.readdirSync(dir), [], 'no file was created');
  t.equal(
    spawnSync(BIN, ['--version'], { encoding: 'utf8' }).stdout,
    `rank-supervisor ${expectedSupervisorVersion()}\n`,
  );
  t.match(spawnSync(BIN, ['--help'], { encoding: 'utf8' }), {
    status: 0,
    stdout: /^usage: rank-supervisor run\|exec \[--cpus LIST\] \[--mems LIST\]/,
  });
});

t.test('exit code and signal are recorded exactly, byte for byte', { skip }, async (t) => {
  const corePattern = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
  const signo = os.constants.signals;
  const cases: [string, string][] = [
    ['exit 0', '{"code":0,"signal":null,"core":false,"leftover":false}'],
    ['exit 255', '{"code":255,"signal":null,"core":false,"leftover":false}'],
    // what a shell wrapper would confuse with SIGKILL
    ['exit 137', '{"code":137,"signal":null,"core":false,"leftover":false}'],
    ['kill -KILL $$', `{"code":null,"signal":${signo.SIGKILL},"core":false,"leftover":false}`],
    ['kill -TERM $$', `{"code":null,"signal":${signo.SIGTERM},"core":false,"leftover":false}`],
    ['kill -USR1 $$', `{"code":null,"signal":${signo.SIGUSR1},"core":false,"leftover":false}`],
    // an orphan the rank leaves behind is ended before the record is written
    ['sleep 300 & exit 3', '{"code":3,"signal":null,"core":false,"leftover":false}'],
  ];
  // a core file in the rank's cwd only where the kernel writes one there (no pipe to a helper)
  if (/^[^|/%]+$/.test(corePattern))
    cases.push([
      'ulimit -c unlimited; kill -SEGV $$',
      `{"code":null,"signal":${signo.SIGSEGV},"core":true,"leftover":false}`,
    ]);
  for (const [script, want] of cases) {
    const dir = rankDir(t, `exit-${cases.findIndex((c) => c[0] === script)}`);
    const r = await supervise(NATIVE, ['run', dir, '-', '-', dir, '--', 'sh', '-c', script]);
    t.equal(r.code, 0, 'the supervisor exits 0 after the rank');
    const pid = Number(/^started (\d+)\n$/.exec(r.stdout)?.[1]);
    t.ok(pid > 0, 'it answers "started PID"');
    const rank = JSON.parse(read(dir, 'rank.json')) as Record<string, unknown>;
    t.match(rank, { pid, pgid: pid, supervisorPid: Number, supervisorStartTicks: Number, cgroup: null, pty: false });
    t.same(Object.keys(rank), ['pid', 'pgid', 'supervisorPid', 'supervisorStartTicks', 'cgroup', 'pty']);
    t.equal(read(dir, 'exit.json'), `${want}\n`, `${script}: ${want}`);
  }
});

t.test('a start that fails answers "failed CODE MESSAGE" and records it, byte for byte', { skip }, async (t) => {
  const plain = path.join(tmpSpool(t), 'plain-file');
  fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
  const badInterpreter = path.join(tmpSpool(t), 'bad-interpreter');
  fs.writeFileSync(badInterpreter, '#! /nonexistent/interpreter -x\n', { mode: 0o755 });
  const cases: [string, string[], string][] = [
    [
      'bad cwd',
      ['/nonexistent-rankd-cwd', '--', 'true'],
      'RANKD_RANK_BAD_CWD /nonexistent-rankd-cwd: No such file or directory',
    ],
    [
      'missing program',
      ['/', '--', '/nonexistent/program'],
      'RANKD_RANK_PROGRAM_NOT_FOUND /nonexistent/program: No such file or directory',
    ],
    [
      'program without execute permission',
      ['/', '--', plain],
      `RANKD_RANK_PROGRAM_NOT_EXECUTABLE ${plain}: Permission denied`,
    ],
    ['directory as the program', ['/', '--', '/etc'], 'RANKD_RANK_PROGRAM_NOT_EXECUTABLE /etc: Permission denied'],
    [
      'a #! interpreter that does not exist',
      ['/', '--', badInterpreter],
      `RANKD_RANK_PROGRAM_NOT_FOUND ${badInterpreter}: /nonexistent/interpreter: bad interpreter: No such file or directory`,
    ],
    ['missing cgroup', ['/', '--', 'true'], 'RANKD_RANK_CGROUP /nonexistent-rankd-cgroup: No such file or directory'],
  ];
  for (const [what, rest, answer] of cases) {
    const dir = rankDir(t, what.replace(/ /g, '-'));
    const cgroup = what === 'missing cgroup' ? '/nonexistent-rankd-cgroup' : '-';
    const r = await supervise(NATIVE, ['run', dir, cgroup, '-', ...rest]);
    t.equal(r.stdout, `failed ${answer}\n`, `${what}: the answer`);
    t.notOk(fs.existsSync(path.join(dir, 'rank.json')), `${what}: no rank.json`);
    const [code, ...message] = answer.split(' ');
    const record = JSON.stringify({ code: null, signal: null, failed: { code, message: message.join(' ') } });
    t.equal(read(dir, 'exit.json'), `${record}\n`, `${what}: the record, byte for byte`);
  }
  // CPUs the kernel cannot give: a clear failure before the program runs, not a rank that runs unpinned
  const dir = rankDir(t, 'pinning');
  const r = await supervise(NATIVE, ['run', '--cpus', '1048575', dir, '-', '-', '/', '--', 'true']);
  t.equal(r.stdout, 'failed RANKD_RANK_PINNING sched_setaffinity to CPUs 1048575: Invalid argument\n');
  t.match(JSON.parse(read(dir, 'exit.json')), { failed: { code: 'RANKD_RANK_PINNING' } });
});

const memNode = Number(/^Mems_allowed_list:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))![1]);
const numaMaps = fs.existsSync('/proc/self/numa_maps');

t.test('--cpus and --mems: the rank itself is pinned and bound, with no wrapper in between', { skip }, async (t) => {
  const cpu = allowedCpus().at(-1)!;
  const dir = rankDir(t, 'pinned');
  const child = spawn(
    BIN,
    ['run', '--cpus', String(cpu), '--mems', String(memNode), dir, '-', '-', '/', '--', 'sleep', '300'],
    { detached: true, stdio: ['pipe', 'pipe', 'ignore'] },
  );
  const ended = new Promise((r) => child.once('close', r));
  child.stdin.end(RECORDS);
  let answer = '';
  child.stdout.on('data', (d: Buffer) => (answer += d.toString()));
  await until(() => answer.includes('\n'), 'the answer');
  const pid = Number(/^started (\d+)\n$/.exec(answer)![1]);
  await until(() => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\x00300\x00', "the program's exec");
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  t.match(status, new RegExp(`^Cpus_allowed_list:\\s*${cpu}$`, 'm'), 'Cpus_allowed_list is the asked CPU');
  t.match(status, new RegExp(`^Mems_allowed_list:\\s*(\\d+[,-])*${memNode}\\b`, 'm'), 'the asked node is allowed');
  t.match(
    status,
    new RegExp(`^PPid:\\s*${child.pid}$`, 'm'),
    "the program is the supervisor's own child: no numactl, taskset or setsid between",
  );
  if (numaMaps)
    t.equal(
      fs.readFileSync(`/proc/${pid}/numa_maps`, 'utf8').split('\n')[0]!.split(' ')[1],
      `bind:${memNode}`,
      'the task memory policy is MPOL_BIND to the node',
    );
  // whoever signals the supervisor means the rank
  process.kill(child.pid!, 'SIGTERM');
  await ended;
  t.equal(
    read(dir, 'exit.json'),
    `{"code":null,"signal":${os.constants.signals.SIGTERM},"core":false,"leftover":false}\n`,
  );
});

// An agent in a process of its own that starts a supervisor as the real one does and waits
// for the test's SIGKILL. Inline, because tap would run a fixture file here as a test.
const AGENT = `
import { spawn } from 'node:child_process';
const [bin, dir, go] = process.argv.slice(1);
const child = spawn(bin, ['run', dir, '-', '-', '/', '--', 'sh', '-c', 'while [ ! -e ' + go + ' ]; do sleep 0.01; done; exit 5'], { detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
child.stdin.end('PATH=/usr/bin:/bin\\0');
child.stdout.on('data', (d) => process.stdout.write(child.pid + ' ' + d));
setInterval(() => {}, 1 << 30);
`;

t.test('the supervisor outlives a SIGKILL of its agent, and still records the exit', { skip }, async (t) => {
  const spool = tmpSpool(t);
  const dir = path.join(spool, 'rank');
  fs.mkdirSync(dir);
  const go = path.join(spool, 'go');
  const agent = spawn(process.execPath, ['--input-type=module', '-e', AGENT, BIN, dir, go], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  agent.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => /started \d+\n/.test(out), 'the agent to start a rank');
  const [supervisorPid, , rankPid] = out.trim().split(' ').map(Number);
  const gone = new Promise((r) => agent.once('exit', r));
  // the agent's whole process group, as a crash of its unit would take it
  process.kill(-agent.pid!, 'SIGKILL');
  await gone;
  t.ok(alive(supervisorPid!), 'the supervisor lives on');
  t.ok(alive(rankPid!), 'and so does its rank');
  t.notMatch(
    fs.readFileSync(`/proc/${supervisorPid}/status`, 'utf8'),
    new RegExp(`^PPid:\\s*${agent.pid}$`, 'm'),
    'reparented',
  );
  fs.writeFileSync(go, '');
  await until(() => fs.existsSync(path.join(dir, 'exit.json')), 'the exit record');
  t.equal(read(dir, 'exit.json'), '{"code":5,"signal":null,"core":false,"leftover":false}\n');
  await until(() => !alive(supervisorPid!), 'the supervisor to end after its record');
});

t.test('environment records with odd bytes reach the rank unchanged', { skip }, async (t) => {
  const records = Buffer.concat([
    Buffer.from(
      'PATH=/usr/bin:/bin\0EQ=a=b==c\0NL=line1\nline2\n\0CR=a\r\nb\0TAB=\t x \0UTF=é☃\0EMPTY=\0NOEQ\0=nameless\0\0DUP=first\0DUP=second\0HIGH=',
    ),
    Buffer.from([0xff, 0xfe, 0x80, 0x01, 0x7f]),
    Buffer.from('\0'),
  ]);
  const want = [
    'PATH=/usr/bin:/bin',
    'EQ=a=b==c',
    'NL=line1\nline2\n',
    'CR=a\r\nb',
    'TAB=\t x ',
    'UTF=é☃',
    'EMPTY=',
    'NOEQ=',
    'DUP=second',
    'PWD=/tmp',
  ].map((s) => Buffer.from(s).toString('latin1'));
  want.push(Buffer.concat([Buffer.from('HIGH='), Buffer.from([0xff, 0xfe, 0x80, 0x01, 0x7f])]).toString('latin1'));
  const dir = rankDir(t, 'env');
  const r = await supervise(NATIVE, ['run', dir, '-', '-', '/tmp', '--', 'env', '-0'], records);
  t.match(r.stdout, /^started \d+\n$/);
  // latin1 keeps every byte as one character, so the comparison is byte for byte
  const got = fs.readFileSync(path.join(dir, 'stdout')).toString('latin1').split('\0').slice(0, -1);
  t.same(
    got.sort(),
    [...want].sort(),
    'exactly the records, byte for byte (a later one of a name wins, PWD is the cwd)',
  );
});

t.test(
  'exec mode (PTY ranks, exec, shell): RANKDIR/env becomes the environment and is deleted, pinning applies, failures exit 127 or 126',
  { skip },
  (t) => {
    const cpu = allowedCpus()[0]!;
    const dir = tmpSpool(t);
    const envFile = path.join(dir, 'env');
    const records = 'PATH=/usr/bin:/bin\0V=a=b\nc\0=nameless\0TERM=xterm-test\0';
    // the supervisor's own environment, a caller's variable among it, reaches nothing
    const own = { ...HELPER_ENV, TERM: 'xterm-own', OWN_ONLY: 'x' };
    fs.writeFileSync(envFile, records, { mode: 0o600 });
    const ok = spawnSync(
      BIN,
      [
        'exec',
        '--cpus',
        String(cpu),
        dir,
        '-',
        '-',
        '/tmp',
        '--',
        'sh',
        '-c',
        'env -0; grep Cpus_allowed_list /proc/self/status',
      ],
      { env: own, encoding: 'latin1' },
    );
    t.equal(ok.status, 0, ok.stderr);
    const [envOut, status] = [
      ok.stdout.slice(0, ok.stdout.lastIndexOf('\0') + 1),
      ok.stdout.slice(ok.stdout.lastIndexOf('\0') + 1),
    ];
    t.same(
      envOut.split('\0').slice(0, -1).sort(),
      ['PATH=/usr/bin:/bin', 'PWD=/tmp', 'TERM=xterm-test', 'V=a=b\nc'],
      "exactly the records, nothing of the supervisor's own",
    );
    t.notOk(fs.existsSync(envFile), 'the environment file is deleted once read');
    t.match(status, new RegExp(`^Cpus_allowed_list:\\s*${cpu}$`, 'm'));
    const none = spawnSync(BIN, ['exec', dir, '-', '-', '/', '--', 'true'], { env: own, encoding: 'utf8' });
    t.equal(none.status, 127, 'no environment file is a failure, never an empty or inherited environment');
    t.match(none.stderr, /^rankd: RANKD_RANK_SPAWN_FAILED .*\/env: No such file or directory\n$/);
    fs.symlinkSync('/etc/hostname', envFile);
    const link = spawnSync(BIN, ['exec', dir, '-', '-', '/', '--', 'true'], { env: own, encoding: 'utf8' });
    t.equal(link.status, 127, 'a symbolic link is not followed');
    t.match(link.stderr, /^rankd: RANKD_RANK_SPAWN_FAILED .*\/env: /);
    fs.rmSync(envFile, { force: true });
    const env = { ...HELPER_ENV };
    fs.writeFileSync(envFile, records);
    const bad = spawnSync(BIN, ['exec', dir, '-', '-', '/nonexistent-rankd-cwd', '--', 'true'], {
      env,
      encoding: 'utf8',
    });
    t.equal(bad.status, 127);
    t.equal(bad.stderr, 'rankd: RANKD_RANK_BAD_CWD /nonexistent-rankd-cwd: No such file or directory\n');
    const plain = path.join(dir, 'plain-file');
    fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
    const badInterpreter = path.join(dir, 'bad-interpreter');
    fs.writeFileSync(badInterpreter, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    // a program that cannot start: the status a shell gives it, and its words
    const failures: [string, string, number, string][] = [
      [
        'a missing program',
        'rankd-no-such-program',
        127,
        'RANKD_RANK_PROGRAM_NOT_FOUND rankd-no-such-program: No such file or directory',
      ],
      [
        'a program without execute permission',
        plain,
        126,
        `RANKD_RANK_PROGRAM_NOT_EXECUTABLE ${plain}: Permission denied`,
      ],
      [
        'a #! interpreter that does not exist',
        badInterpreter,
        127,
        `RANKD_RANK_PROGRAM_NOT_FOUND ${badInterpreter}: /nonexistent/interpreter: bad interpreter: No such file or directory`,
      ],
    ];
    for (const [what, program, status, line] of failures) {
      fs.writeFileSync(envFile, records);
      const r = spawnSync(BIN, ['exec', dir, '-', '-', '/', '--', program], { env, encoding: 'utf8' });
      t.equal(r.status, status, `${what}: ${status}, as a shell gives`);
      t.equal(r.stderr, `rankd: ${line}\n`, `${what}: the words`);
    }
    t.end();
  },
);
