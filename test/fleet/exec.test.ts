// rankd exec over real agents: per-host exit, output and duration, Ansible's summary
// lines and exit codes, capped output, timeouts that end the command, hosts without an
// agent, and an agent lost in the middle of a command.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { processAlive } from '../helpers/cluster.js';
import { waitUntil } from '../helpers/daemons.js';
import { fleetUnderTest } from './helpers.js';

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-exec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface HostResult {
  host: string;
  node: string | null;
  status: string;
  rc: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutBytes: number;
  truncated: { stdout: boolean; stderr: boolean };
  durationMs: number | null;
  timedOut: boolean;
  error: { code: string; message: string } | null;
}
interface Report {
  hosts: HostResult[];
  summary: { success: number; failed: number; unreachable: number };
}

t.test('mixed success and failure, and a host without an agent, reported like Ansible', async (t) => {
  const f = await fleetUnderTest(t, ['a1', 'a2', 'a3']);
  const imported = await f.importInventory('hosts.ini', '[workers]\na1\na2\na3\nghost1\n');
  t.equal(imported.code, 0, imported.stderr);
  const dir = scratch(t);
  // mkdir is atomic: exactly one host wins, whichever it is
  const race = `mkdir ${dir}/won 2>/dev/null && echo won || { echo lost >&2; exit 3; }`;

  const r = await f.cli(['exec', 'workers', '--', 'sh', '-c', race]);
  t.equal(r.code, 4, 'an unreachable host makes the exit status 4, as in ansible');
  t.equal((r.stdout.match(/^a[123] \| SUCCESS \| rc=0 \| [\d.]+ ms >>\nwon\n/gm) ?? []).length, 1, r.stdout);
  t.equal((r.stdout.match(/^a[123] \| FAILED \| rc=3 \| [\d.]+ ms >>\nlost\n/gm) ?? []).length, 2, r.stdout);
  t.match(r.stdout, /^ghost1 \| UNREACHABLE \| no agent has registered for this host$/m);
  t.match(r.stderr, /1 succeeded, 2 failed, 1 unreachable/);

  const json = await f.cli(['exec', 'workers:!ghost1', '--json', '--', 'sh', '-c', race.replace('/won', '/won2')]);
  t.equal(json.code, 2, 'failed hosts without unreachable ones exit 2');
  const report = JSON.parse(json.stdout) as Report;
  t.same(
    report.hosts.map((h) => h.host),
    ['a1', 'a2', 'a3'],
    'hosts in inventory order',
  );
  t.same(report.summary, { success: 1, failed: 2, unreachable: 0 });
  for (const h of report.hosts) {
    t.equal(h.node, h.host);
    t.ok(typeof h.durationMs === 'number' && h.durationMs >= 0, `${h.host} reports its duration`);
    t.equal(h.rc, h.status === 'SUCCESS' ? 0 : 3);
  }

  const ok = await f.cli(['exec', 'a*', '--', 'true']);
  t.equal(ok.code, 0, ok.stderr);
  t.equal((ok.stdout.match(/\| SUCCESS \| rc=0/g) ?? []).length, 3);
});

t.test('capped output, timeouts, missing programs, bad cwd, shell strings and env', async (t) => {
  const f = await fleetUnderTest(t, ['b1']);
  const dir = scratch(t);

  const big = await f.cli([
    'exec',
    'b1',
    '--json',
    '--max-output',
    '1000',
    '--',
    'sh',
    '-c',
    "head -c 100000 /dev/zero | tr '\\0' x; echo tail >&2",
  ]);
  const h = (JSON.parse(big.stdout) as Report).hosts[0]!;
  t.equal(h.stdout, 'x'.repeat(1000), 'the first 1000 bytes are kept');
  t.equal(h.stdoutBytes, 100000, 'every byte is counted');
  t.same(h.truncated, { stdout: true, stderr: false });
  t.equal(h.stderr, 'tail\n');
  const bigText = await f.cli([
    'exec',
    'b1',
    '--max-output',
    '10',
    '--',
    'sh',
    '-c',
    "head -c 50 /dev/zero | tr '\\0' y",
  ]);
  t.match(
    bigText.stdout,
    /^b1 \| SUCCESS \| rc=0 \| [\d.]+ ms >>\nyyyyyyyyyy\n\[rankd: stdout truncated; it was 50 bytes\]\n$/,
  );

  const slow = await f.cli([
    'exec',
    'b1',
    '--json',
    '--timeout',
    '1',
    '--',
    'sh',
    '-c',
    `echo $$ > ${dir}/sh.pid; sleep 60 & echo $! > ${dir}/sleep.pid; wait`,
  ]);
  t.equal(slow.code, 2);
  const timedOut = (JSON.parse(slow.stdout) as Report).hosts[0]!;
  t.equal(timedOut.status, 'FAILED');
  t.equal(timedOut.timedOut, true);
  t.equal(timedOut.signal, 'SIGTERM');
  t.equal(timedOut.error?.code, 'RANKD_EXEC_TIMEOUT');
  for (const file of ['sh.pid', 'sleep.pid']) {
    const pid = Number(readFileSync(join(dir, file), 'utf8'));
    await waitUntil(`${file} ${pid} ended`, 10_000, () => !processAlive(pid));
    t.pass(`${file}: the whole session was ended, background children included`);
  }

  const missing = await f.cli(['exec', 'b1', '--', 'no-such-program-xyz', '--flag']);
  t.equal(missing.code, 2);
  t.match(
    missing.stdout,
    /^b1 \| FAILED \| rc=127 \| [\d.]+ ms >>\nno-such-program-xyz: command not found\n$/,
    "rc 127 and the shell's words, as `sh -c` would give",
  );
  const notExecutable = join(dir, 'not-executable');
  writeFileSync(notExecutable, '#!/bin/sh\necho ran\n', { mode: 0o644 });
  const denied = await f.cli(['exec', 'b1', '--json', notExecutable]);
  t.match((JSON.parse(denied.stdout) as Report).hosts[0], {
    status: 'FAILED',
    rc: 126,
    stdout: '',
    error: { code: 'RANKD_EXEC_SPAWN', message: `${notExecutable}: Permission denied` },
  });
  const badCwd = await f.cli(['exec', 'b1', '--json', '--cwd', '/nonexistent-dir', '--', 'true']);
  t.same((JSON.parse(badCwd.stdout) as Report).hosts[0]!.error, {
    code: 'RANKD_EXEC_SPAWN',
    message: 'cwd /nonexistent-dir: ENOENT',
  });

  const shell = await f.cli(['exec', 'b1', '--shell', 'echo a-b | tr - +; echo "$FOO"', '--env', 'FOO=bar baz']);
  t.equal(shell.code, 0, shell.stderr);
  t.match(shell.stdout, /^a\+b\nbar baz\n$/m);
  const argv = await f.cli(['exec', 'b1', '--', 'echo', 'a | tr a b', '$HOME']);
  t.match(argv.stdout, /^a \| tr a b \$HOME$/m, 'argv is never given to a shell');

  if (process.getuid?.() === 0) {
    const nobody = await f.cli(['exec', 'b1', '--user', 'nobody', '--', 'sh', '-c', 'id -un; id -G; echo "$HOME"']);
    t.equal(nobody.code, 0, nobody.stderr);
    const [name, groups] = nobody.stdout.split('\n').slice(1);
    t.equal(name, 'nobody', 'a root agent runs the command as the user');
    t.notOk(groups!.split(' ').includes('0'), "none of root's groups come along");
  }
  const noUser = await f.cli(['exec', 'b1', '--json', '--user', 'no-such-user-xyz', '--', 'true']);
  t.match((JSON.parse(noUser.stdout) as Report).hosts[0]!.error, {
    code: 'RANKD_EXEC_USER',
    message: /no-such-user-xyz: no such user/,
  });

  const both = await f.cli(['exec', 'b1', '--shell', 'true', '--', 'true']);
  t.equal(both.code, 64);
  const neither = await f.cli(['exec', 'b1']);
  t.equal(neither.code, 64);
  t.match(neither.stderr, /nothing to run/);
});

t.test('unknown patterns and nodes are named in the error', async (t) => {
  const f = await fleetUnderTest(t, ['c1']);
  const unknown = await f.cli(['exec', 'c1:!c2', '--', 'true']);
  t.equal(unknown.code, 65);
  t.match(unknown.stderr, /"c2" matches no group, host or node \(RANKD_PATTERN_UNKNOWN\)/);
  const invalid = await f.cli(['exec', 'c1::', '--', 'true']);
  t.match(invalid.stderr, /RANKD_PATTERN_INVALID/);
  const rest = await f.controller.api<{ code: string; message: string }>('/v1/exec', {
    method: 'POST',
    body: { pattern: 'nosuchnode', command: ['true'] },
  });
  t.equal(rest.status, 400);
  t.equal(rest.body.code, 'RANKD_PATTERN_UNKNOWN');
  t.match(rest.body.message, /nosuchnode/);
});

t.test('an agent lost in the middle of a command is UNREACHABLE and its command is ended', async (t) => {
  const f = await fleetUnderTest(t, ['d1', 'd2']);
  const dir = scratch(t);
  const running = f.cli(['exec', 'd*', '--json', '--', 'sh', '-c', `echo $$ > $(mktemp ${dir}/pid.XXXXXX); sleep 4`]);
  const pidFiles = await waitUntil('both commands running', 20_000, () => {
    const files = readdirSync(dir)
      .filter((n) => n.startsWith('pid.'))
      .map((n) => join(dir, n));
    return files.length === 2 && files.every((p) => readFileSync(p, 'utf8').trim() !== '') ? files : undefined;
  });
  await f.agents.get('d2')!.stop();
  const r = await running;
  t.equal(r.code, 4);
  const report = JSON.parse(r.stdout) as Report;
  const d1 = report.hosts.find((h) => h.host === 'd1')!;
  const d2 = report.hosts.find((h) => h.host === 'd2')!;
  t.equal(d1.status, 'SUCCESS', 'the other host finishes');
  t.equal(d2.status, 'UNREACHABLE');
  t.equal(d2.error?.code, 'RANKD_AGENT_UNREACHABLE');
  t.match(d2.error?.message, /connection to its agent was lost|not connected/);
  for (const file of pidFiles) {
    const pid = Number(readFileSync(file, 'utf8'));
    await waitUntil(`command ${pid} ended`, 10_000, () => !processAlive(pid));
  }
  t.pass('no command outlives the run');
});
