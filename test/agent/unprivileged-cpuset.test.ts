// An agent as an unprivileged user inside a cgroup that grants a subset of the machine,
// as a Slurm job step or a pod would start it: real cgroup v1 cpuset and memory children
// (this host and CI have cgroup v1), a real controller, a real `rankd agent` as `nobody`
// (an existing system user, so nothing is added to /etc/passwd) put into the cgroups before
// it execs. Its facts show only CPU 1 of the machine and the memory limit, plans stay on
// CPU 1, its ranks run there as nobody, and what does not fit is refused with the allowed
// set named and nothing started.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Facts } from '@rankd/protocol';
import { formatCpuList, parseCpuList } from '@rankd/protocol/cpuset';
import { runCli, spawnDaemon, startController, waitForNode, waitUntil } from '../helpers/daemons.js';

const CPUSET = '/sys/fs/cgroup/cpuset';
const MEMORY = '/sys/fs/cgroup/memory';
const USER = 'nobody';
const NODE = 'unpriv1';
const LIMIT = 1024 ** 3;

const online = parseCpuList(readFileSync('/sys/devices/system/cpu/online', 'utf8').trim());
const skip =
  process.getuid?.() !== 0
    ? 'creating cgroups and starting an agent as another user take root (CI runs as root)'
    : !existsSync(`${CPUSET}/cpuset.cpus`) || !existsSync(`${MEMORY}/memory.limit_in_bytes`)
      ? 'written for cgroup v1 (cpuset at /sys/fs/cgroup/cpuset, memory at /sys/fs/cgroup/memory), as this host and CI have'
      : !online.includes(0) || !online.includes(1)
        ? 'needs CPUs 0 and 1 online: the cgroup grants CPU 1 of them'
        : false;

/** The test process's own cgroup in a v1 hierarchy: the children go below it, inside whatever holds the test. */
function ownCgroup(controller: string): string {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller));
  return line?.split(':')[2] ?? '/';
}

/** Removes a cgroup once its last process has gone (the kernel refuses rmdir until then). */
async function removeCgroup(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  await waitUntil(`${dir} to be empty`, 10_000, () => readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim() === '');
  rmdirSync(dir);
}

t.test('an unprivileged agent in a cpuset of CPU 1: facts, plans, ranks and refusals', { skip }, async (t) => {
  const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }).trim());
  const name = `rankd-test-${process.pid}`;

  // the job's cgroups: CPU 1 and memory node 0; 1 GiB. Delegated to the user as Slurm and runc do.
  const cpusetPath = `${ownCgroup('cpuset').replace(/\/$/, '')}/${name}`;
  const memoryPath = `${ownCgroup('memory').replace(/\/$/, '')}/${name}`;
  const cpusetDir = CPUSET + cpusetPath;
  const memoryDir = MEMORY + memoryPath;
  mkdirSync(cpusetDir);
  t.teardown(() => removeCgroup(cpusetDir));
  writeFileSync(join(cpusetDir, 'cpuset.cpus'), '1');
  writeFileSync(join(cpusetDir, 'cpuset.mems'), '0');
  mkdirSync(memoryDir);
  t.teardown(() => removeCgroup(memoryDir));
  writeFileSync(join(memoryDir, 'memory.limit_in_bytes'), String(LIMIT));
  for (const dir of [cpusetDir, memoryDir])
    for (const p of [dir, join(dir, 'cgroup.procs'), join(dir, 'tasks')]) chownSync(p, uid, gid);

  // everything the agent keeps is the user's
  const home = mkdtempSync('/tmp/rankd-unpriv-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const stateDir = join(home, 'state');
  const spoolDir = join(home, 'spool');
  for (const dir of [stateDir, spoolDir]) mkdirSync(dir);
  for (const dir of [home, stateDir, spoolDir]) chownSync(dir, uid, gid);

  const controller = await startController();
  t.teardown(() => controller.stop());
  // the agent's own command line: `--ephemeral` goes here once `rankd agent` has it
  const agentArgs = [
    'agent',
    // the agent rankd up --slurm and --pods start: runs as its user, ranks as that user only
    '--ephemeral',
    '--controller',
    controller.url,
    '--ca-hash',
    controller.caHash,
    '--state-dir',
    stateDir,
    '--spool-dir',
    spoolDir,
    '--name',
    NODE,
    '--config',
    '/dev/null',
  ];
  // into the job's cgroups first, then the user's uid: as slurmstepd or runc starts a step
  const intoJob = [
    'sh',
    '-c',
    `echo $$ > ${cpusetDir}/cgroup.procs && echo $$ > ${memoryDir}/cgroup.procs && ` +
      `exec setpriv --reuid=${uid} --regid=${gid} --clear-groups "$0" "$@"`,
  ];
  const agent = spawnDaemon(
    agentArgs,
    { RANKD_JOIN_TOKEN: controller.joinToken, RANKD_RECONNECT_MAX_MS: '500', HOME: home },
    intoJob,
  );
  t.teardown(() => agent.stop());
  await waitForNode(controller, NODE, 'ready', 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\nagent output:\n${agent.output()}`);
  });
  const cli = (args: string[]) => runCli(args, controller.clientEnv, 60_000);

  t.test('its facts: CPU 1 allowed of the whole machine, and the memory limit', async (t) => {
    const { status, body: facts } = await controller.api<Facts>(`/v1/nodes/${NODE}/facts`);
    t.equal(status, 200);
    t.same(facts.cpu.allowed, [1], 'only the cpuset');
    t.equal(facts.cpu.pus, 1);
    t.equal(facts.cpu.hardware.pus, online.length, `the hardware count is every online CPU (${online.length})`);
    t.same(facts.cpu.online, online);
    t.equal(facts.cpu.cpusetCgroup, `cgroup1:${cpusetPath}`);
    t.same(facts.numa.allowed, [0]);
    t.equal(facts.memory.cgroupLimitKb, LIMIT / 1024, 'the memory cgroup limit, read as the agent');
    t.equal(facts.memory.cgroupPath, `cgroup1:${memoryPath}`);
    const listed = await controller.api<{
      nodes: Array<{ name: string; hardware: { pus: number; memoryLimitBytes?: number | null } | null }>;
    }>('/v1/nodes');
    t.match(
      listed.body.nodes.find((n) => n.name === NODE)?.hardware,
      { pus: 1, memoryLimitBytes: LIMIT },
      'GET /v1/nodes shows the allowed CPUs and the limit',
    );
    const summary = await cli(['facts', NODE]);
    t.equal(summary.code, 0, summary.stderr);
    t.match(summary.stdout, new RegExp(`allowed: .*\\(cpus 1, mems 0; cgroup1:${cpusetPath}\\)`));
    t.match(summary.stdout, /cgroup limit 1\.0 GiB/);
  });

  t.test('a plan binds inside the cpuset', async (t) => {
    const plan = await cli(['plan', '-n', '1', '--json']);
    t.equal(plan.code, 0, plan.stderr);
    // the document of POST /v1/plan: the rank map, with its schedule
    const map = JSON.parse(plan.stdout) as { ranks: Array<{ node: string; cpus: number[] }> };
    t.same(
      map.ranks.map((r) => [r.node, r.cpus]),
      [[NODE, [1]]],
    );
  });

  t.test('a rank runs on CPU 1, as the agent user, in the job cgroup', async (t) => {
    const cpus = await cli(['run', '-n', '1', '--cwd', '/', '--', 'grep', 'Cpus_allowed_list', '/proc/self/status']);
    t.equal(cpus.code, 0, cpus.stderr);
    t.match(cpus.stdout, /Cpus_allowed_list:\s+1\s*$/m);
    const id = await cli(['run', '-n', '1', '--cwd', '/', '--', 'id', '-u']);
    t.equal(id.code, 0, id.stderr);
    t.match(id.stdout, new RegExp(`(^|\\s)${uid}\\s*$`, 'm'), `uid ${uid} (${USER})`);
    const cgroup = await cli(['run', '-n', '1', '--cwd', '/', '--', 'cat', '/proc/self/cgroup']);
    t.match(cgroup.stdout, new RegExp(`:cpuset:${cpusetPath}$`, 'm'), 'the rank stays in the cpuset child');
  });

  t.test('two ranks without --oversubscribe: refused at plan time naming the allowed set; nothing runs', async (t) => {
    const marker = join(home, 'two-ranks-ran');
    const r = await cli(['run', '-n', '2', '--cwd', '/', '--', 'touch', marker]);
    t.equal(r.code, 65, 'refused');
    t.match(
      r.stderr,
      `node ${NODE}: 2 ranks but only 1 allowed core (the cgroup's cpuset allows CPU 1 of CPUs ${formatCpuList(online)};`,
    );
    t.match(r.stderr, /RANKD_PLAN_TOO_MANY_RANKS/);
    t.notOk(existsSync(marker), 'no rank ran');
  });

  t.test('a job naming another user (root, daemon) is refused; nothing runs', async (t) => {
    for (const user of ['root', 'daemon']) {
      const marker = join(home, `${user}-ran`);
      const r = await cli(['run', '-n', '1', '--user', user, '--cwd', '/', '--', 'touch', marker]);
      t.not(r.code, 0, `${user}: refused`);
      // root meets the agent's root policy first; any other user, the uid it runs as
      t.match(
        r.stdout + r.stderr,
        user === 'root'
          ? /user root is root, which this agent does not allow|its own user \(uid \d+\) only, not as root/
          : new RegExp(`ephemeral: it runs ranks as its own user \\(uid ${uid}\\) only, not as daemon \\(uid \\d+\\)`),
      );
      t.notOk(existsSync(marker), `${user}: no rank ran`);
    }
  });
});
