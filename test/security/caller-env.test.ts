// Finding 3 of issue 24: a caller's environment must never act in a process that is root.
// A real LD_PRELOAD library, built here, logs `uid euid pid argv0` from its constructor to
// a file every user may append to. It is pushed through exec, job --env and --pty ranks
// for the unprivileged user nobody: every line must be nobody's (the root helpers that
// switch users never load it), and there must be lines from the final program (the
// variable did reach it, after the switch). For root targets loader variables are
// refused, with RANKD_ROOT_LOADER_ENV, and nothing runs. The audit log names the
// variables and never holds their values, and the agent's own environment does not leak.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { AuditEntry } from '@rankd/protocol';
import { waitUntil } from '../helpers/daemons.js';
import { fleetUnderTest, type FleetUnderTest } from '../fleet/helpers.js';

const isRoot = process.getuid?.() === 0;
const hasGcc = spawnSync('gcc', ['--version']).status === 0;
const skip = !isRoot
  ? 'switching users needs root (CI runs this as root)'
  : !hasGcc
    ? 'gcc is needed to build the LD_PRELOAD probe'
    : false;

const NOBODY_UID = Number(
  fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('nobody:'))
    ?.split(':')[2] ?? NaN,
);

// glibc passes (argc, argv, envp) to constructors; the log path is compiled in, so the probe
// needs nothing from the environment it is testing
const PROBE_C = `
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void probe(int argc, char **argv) {
  int fd = open(PROBE_LOG, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  dprintf(fd, "%u %u %d %s\\n", (unsigned)getuid(), (unsigned)geteuid(), (int)getpid(), argc > 0 ? argv[0] : "?");
  close(fd);
}
`;

interface Probe {
  lib: string;
  lines(): Array<{ uid: number; euid: number; pid: number; argv0: string }>;
  clear(): void;
}

/** The probe library in a 0777 directory of its own, and its 0666 log. */
function buildProbe(t: Test): Probe {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-probe-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.chmodSync(dir, 0o777);
  const log = path.join(dir, 'probe.log');
  const src = path.join(dir, 'probe.c');
  const lib = path.join(dir, 'probe.so');
  fs.writeFileSync(src, PROBE_C);
  const cc = spawnSync('gcc', ['-shared', '-fPIC', '-O2', `-DPROBE_LOG="${log}"`, '-o', lib, src], {
    encoding: 'utf8',
  });
  if (cc.status !== 0) throw new Error(`gcc: ${cc.stderr}`);
  fs.chmodSync(lib, 0o755);
  const clear = () => {
    fs.writeFileSync(log, '');
    fs.chmodSync(log, 0o666);
  };
  clear();
  return {
    lib,
    clear,
    lines: () =>
      fs
        .readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [uid, euid, pid, ...argv0] = l.split(' ');
          return { uid: Number(uid), euid: Number(euid), pid: Number(pid), argv0: argv0.join(' ') };
        }),
  };
}

/** Every probe line is nobody's, never root's, and one comes from `program`: the variable reached it, after the switch. */
function onlyNobody(t: Test, probe: Probe, program: RegExp, what: string): void {
  const lines = probe.lines();
  t.ok(lines.length > 0, `${what}: the probe ran (${lines.length} lines)`);
  const root = lines.filter((l) => l.uid === 0 || l.euid === 0);
  t.same(root, [], `${what}: the probe never ran with uid 0 or euid 0`);
  t.ok(
    lines.every((l) => l.uid === NOBODY_UID && l.euid === NOBODY_UID),
    `${what}: every line is nobody's (uid ${NOBODY_UID}): ${JSON.stringify(lines)}`,
  );
  t.ok(
    lines.some((l) => program.test(l.argv0)),
    `${what}: the final program loaded it: ${JSON.stringify(lines.map((l) => l.argv0))}`,
  );
}

async function audit(f: FleetUnderTest): Promise<AuditEntry[]> {
  const r = await f.cli(['audit', '--json']);
  if (r.code !== 0) throw new Error(`rankd audit: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { entries: AuditEntry[] }).entries;
}

t.test(
  'LD_PRELOAD through exec, job --env and --pty ranks runs only as the target user, after the switch',
  { skip },
  async (t) => {
    const probe = buildProbe(t);
    const f = await fleetUnderTest(t, ['env1']);
    const preload = `LD_PRELOAD=${probe.lib}`;

    const exec = await f.cli([
      'exec',
      'env1',
      '--json',
      '--user',
      'nobody',
      '--env',
      preload,
      '--',
      'sh',
      '-c',
      'id -u; echo "$LD_PRELOAD"',
    ]);
    t.equal(exec.code, 0, exec.stderr);
    const host = (JSON.parse(exec.stdout) as { hosts: Array<{ stdout: string }> }).hosts[0]!;
    t.equal(host.stdout, `${NOBODY_UID}\n${probe.lib}\n`, 'exec: the program runs as nobody with the variable');
    onlyNobody(t, probe, /^(sh|id)$/, 'exec');

    probe.clear();
    const run = await f.cli(['run', '-n', '1', '-q', '--user', 'nobody', '--env', preload, '--', 'sh', '-c', 'id -u']);
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, new RegExp(`^(0: )?${NOBODY_UID}$`, 'm'), 'job: the rank runs as nobody');
    onlyNobody(t, probe, /^(sh|id)$/, 'job --env');

    probe.clear();
    const pty = await f.cli([
      'run',
      '-n',
      '1',
      '-q',
      '--pty',
      '--user',
      'nobody',
      '--env',
      preload,
      '--',
      'sh',
      '-c',
      'id -u',
    ]);
    t.equal(pty.code, 0, pty.stderr);
    t.match(pty.stdout, new RegExp(`${NOBODY_UID}\\r?$`, 'm'), 'PTY rank: runs as nobody');
    onlyNobody(t, probe, /^(sh|id)$/, 'job --pty');

    const entries = await audit(f);
    const execEntry = entries.find(
      (e) => e.route === '/v1/exec' && e.user !== null && e.envNames?.includes('LD_PRELOAD'),
    );
    t.same(execEntry?.envNames, ['LD_PRELOAD'], 'the exec entry names the variable');
    const jobEntries = entries.filter((e) => e.route === '/v1/jobs' && e.method === 'POST');
    t.ok(
      jobEntries.length >= 2 && jobEntries.every((e) => e.envNames?.includes('LD_PRELOAD')),
      `each job entry names it: ${JSON.stringify(jobEntries)}`,
    );
    t.notOk(JSON.stringify(entries).includes(probe.lib), 'no entry holds its value');
  },
);

t.test(
  'a root target with a loader variable is refused with RANKD_ROOT_LOADER_ENV, and nothing runs',
  { skip },
  async (t) => {
    const probe = buildProbe(t);
    const f = await fleetUnderTest(t, ['env2']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-rootenv-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const marker = (name: string) => path.join(dir, name);

    // named root: the controller knows at submission
    const exec = await f.controller.api<{ code: string; message: string }>('/v1/exec', {
      method: 'POST',
      body: {
        pattern: 'env2',
        command: ['touch', marker('exec-root')],
        user: 'root',
        env: { LD_PRELOAD: probe.lib, GCONV_PATH: '/tmp' },
      },
    });
    t.equal(exec.status, 400);
    t.equal(exec.body.code, 'RANKD_ROOT_LOADER_ENV');
    t.match(
      exec.body.message,
      /the command runs as root and sets GCONV_PATH, LD_PRELOAD: loader and libc variables are refused for root targets/,
    );
    const job = await f.controller.api<{ code: string }>('/v1/jobs', {
      method: 'POST',
      body: { command: ['touch', marker('job-root')], user: '0', env: { MALLOC_CHECK_: '3' } },
    });
    t.equal(job.status, 400);
    t.equal(job.body.code, 'RANKD_ROOT_LOADER_ENV');
    const cliJob = await f.cli([
      'run',
      '-n',
      '1',
      '--user',
      'root',
      '--env',
      `LD_PRELOAD=${probe.lib}`,
      '--',
      'touch',
      marker('cli-root'),
    ]);
    t.not(cliJob.code, 0);
    t.match(cliJob.stderr, /RANKD_ROOT_LOADER_ENV|sets LD_PRELOAD/, 'rankd run --env: refused at submission too');

    // no user: the agent runs it as itself (root, --allow-root), and only the agent knows
    const agentExec = await f.cli([
      'exec',
      'env2',
      '--json',
      '--env',
      `LD_PRELOAD=${probe.lib}`,
      '--',
      'touch',
      marker('exec-agent'),
    ]);
    t.equal(agentExec.code, 2);
    t.match((JSON.parse(agentExec.stdout) as { hosts: Array<{ error: unknown }> }).hosts[0]!.error, {
      code: 'RANKD_ROOT_LOADER_ENV',
      message: /sets LD_PRELOAD/,
    });
    const agentJob = await f.cli([
      'run',
      '-n',
      '1',
      '--env',
      `LD_AUDIT=${probe.lib}`,
      '--',
      'touch',
      marker('job-agent'),
    ]);
    t.not(agentJob.code, 0);
    t.match(agentJob.stdout + agentJob.stderr, /RANKD_ROOT_LOADER_ENV/);
    const agentPty = await f.cli([
      'run',
      '-n',
      '1',
      '--pty',
      '--env',
      `LD_PRELOAD=${probe.lib}`,
      '--',
      'touch',
      marker('pty-agent'),
    ]);
    t.not(agentPty.code, 0);
    t.match(agentPty.stdout + agentPty.stderr, /RANKD_ROOT_LOADER_ENV/);

    t.same(fs.readdirSync(dir), [], 'no program ran');
    t.same(probe.lines(), [], 'the probe never loaded');
    const refused = (await audit(f)).filter(
      (e) => e.status === 400 && e.envNames?.some((n) => n === 'LD_PRELOAD' || n === 'MALLOC_CHECK_'),
    );
    t.equal(refused.length, 3, 'the refusals at submission are audited with the names');
  },
);

const noOpenMpi =
  process.env.CI === 'true' || spawnSync('sh', ['-c', 'command -v mpirun.openmpi && command -v orted']).status === 0
    ? false
    : 'mpirun.openmpi and orted are not installed (Debian: openmpi-bin)';

t.test(
  '--mpi openmpi, which runs only as the agent itself (root here): a loader variable is refused for its ranks, and neither mpirun nor orted gets it',
  { skip: skip || noOpenMpi },
  async (t) => {
    const probe = buildProbe(t);
    const f = await fleetUnderTest(t, ['env4']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rankd-rootenv-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const r = await f.cli(
      [
        'run',
        '--mpi',
        'openmpi',
        '-n',
        '1',
        '--env',
        `LD_PRELOAD=${probe.lib}`,
        '--',
        'touch',
        path.join(dir, 'ompi-rank'),
      ],
      60_000,
    );
    t.not(r.code, 0);
    t.match(r.stdout + r.stderr, /RANKD_ROOT_LOADER_ENV/);
    t.same(fs.readdirSync(dir), [], 'no rank ran');
    t.same(probe.lines(), [], 'the probe never loaded: not in mpirun, orted or the rank');
  },
);

t.test(
  "the shell's program gets its client's TERM only after the switch, and nothing of the agent's own environment reaches a rank, a command or a shell",
  { skip },
  async (t) => {
    // what systemd or `rankd up` might have given the agent
    const saved = { NODE_OPTIONS: process.env.NODE_OPTIONS, RANKD_TEST_AGENT_ONLY: process.env.RANKD_TEST_AGENT_ONLY };
    process.env.NODE_OPTIONS = '--max-old-space-size=512';
    process.env.RANKD_TEST_AGENT_ONLY = 'agent-private';
    const restore = () => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    };
    t.teardown(restore);
    const f = await fleetUnderTest(t, ['env3']);
    // the agent took them at its start; the clients below must not hold them, since
    // `rankd run` exports its own environment to the ranks (docs/ranks.md)
    restore();
    // the agent's values (a client's own NODE_OPTIONS, as tap sets it, may be exported by rankd run)
    const leaked = /max-old-space-size=512|RANKD_TEST_AGENT_ONLY|agent-private/;

    const shell = await f.cli(['shell', 'env3', '--user', 'nobody', '--', 'sh', '-c', 'id -u; env']);
    t.equal(shell.code, 0, shell.stderr);
    t.match(shell.stdout, new RegExp(`^${NOBODY_UID}\\r?$`, 'm'), 'the shell runs as nobody');
    t.match(shell.stdout, /^TERM=\S+\r?$/m, 'with the client terminal type');
    t.notMatch(shell.stdout, leaked, "the shell sees nothing of the agent's environment");

    const exec = await f.cli(['exec', 'env3', '--json', '--user', 'nobody', '--', 'env']);
    const execOut = (JSON.parse(exec.stdout) as { hosts: Array<{ stdout: string }> }).hosts[0]!.stdout;
    t.match(execOut, /^USER=nobody$/m);
    t.notMatch(execOut, leaked, "exec sees nothing of the agent's environment");

    for (const pty of [false, true]) {
      const run = await f.cli(['run', '-n', '1', '-q', ...(pty ? ['--pty'] : []), '--user', 'nobody', '--', 'env']);
      t.equal(run.code, 0, run.stderr);
      t.match(run.stdout, /USER=nobody/);
      t.notMatch(run.stdout, leaked, `a ${pty ? 'PTY ' : ''}rank sees nothing of the agent's environment`);
    }

    const shellEntry = (await audit(f)).find((e) => e.route === '/v1/shell' && e.user !== null);
    t.same(shellEntry?.envNames, ['TERM'], "the shell's audit entry names the one variable its client sets");
    await waitUntil('the shell session is complete in the log', 10_000, async () =>
      (await audit(f)).some((e) => e.route === '/v1/shell' && e.status === 101),
    );
  },
);
