// The Slurm rig (harness/slurm.ts) that the `rankd up --slurm` tests stand on: a real
// slurmctld and three slurmd across the namespace hosts, steps confined by Slurm's own
// cgroups (cgroup v1 on this machine and in CI), allocations that end when cancelled, and a
// stop that leaves nothing.
import t, { type Test } from 'tap';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI } from './harness/cluster.js';
import { ip } from './harness/commands.js';
import { processAlive } from '../helpers/cluster.js';
import { netnsId, netnsOfPid } from './harness/ns-process.js';
import { parseCpuList } from './harness/slurm-cgroups.js';
import { slurmDaemonsOnMachine, slurmTest, startSlurm, type SlurmCluster, type SlurmNode } from './harness/slurm.js';
import { heldByChild } from './harness/held-child.js';
import { waitFor } from './harness/wait.js';

const HOLD = fileURLToPath(new URL('./harness/hold-slurm.ts', import.meta.url));
const ALLOC = ['--nodes=3', '--cpus-per-task=1', '--ntasks-per-node=1'];
const STEP = 'srun --overlap --ntasks-per-node=1 --cpu-bind=none';
/** scancel to every step process gone: Slurm signals at once, then SIGKILLs after KillWait=2 s. */
const CANCEL_BOUND_MS = 10_000;
const MIB = 1024 * 1024;

/** One line per task: node | Cpus_allowed_list | cpuset cgroup | its cpuset.cpus | addresses | job memory limit. */
const PROBE = String.raw`
cpuset=$(cat /proc/self/cpuset)
job=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | sed 's|/step_.*||')
printf '%s|%s|%s|%s|%s|%s\n' "$SLURMD_NODENAME" \
  "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)" \
  "$cpuset" "$(cat "/sys/fs/cgroup/cpuset$cpuset/cpuset.cpus")" \
  "$(ip -4 -o addr show | awk '{ printf "%s=%s ", $2, $4 }')" \
  "$(cat "/sys/fs/cgroup/memory$job/memory.limit_in_bytes")"
`;

interface ProbeLine {
  node: string;
  allowed: number[];
  cpuset: string;
  cpusetCpus: number[];
  addresses: string[];
  jobMemoryLimit: number;
}

function parseProbe(stdout: string): ProbeLine[] {
  return stdout
    .split('\n')
    .filter((l) => l.includes('|'))
    .map((l) => {
      const [node, allowed, cpuset, cpusetCpus, addresses, limit] = l.split('|');
      return {
        node: node!,
        allowed: parseCpuList(allowed!),
        cpuset: cpuset!,
        cpusetCpus: parseCpuList(cpusetCpus!),
        addresses: addresses!.trim().split(/\s+/),
        jobMemoryLimit: Number(limit),
      };
    });
}

/**
 * The cgroup Slurm gives a step: `<host root>/slurm_<node>/uid_0/job_<id>/step_0` (`/slurm`
 * on a build without multiple-slurmd).
 */
function stepCgroup(node: SlurmNode, jobId: string, uid = 0): RegExp {
  const root = node.cgroupRoot['cpuset']!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${root}/slurm(_${node.name})?/uid_${uid}/job_${jobId}/step_0$`);
}

function cpusAllowed(pid: number): number[] {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return parseCpuList(/^Cpus_allowed_list:\s*(\S+)/m.exec(status)![1]!);
}

/** The node whose cgroup a process is in, read from its cpuset path. */
function nodeOf(slurm: SlurmCluster, pid: number): SlurmNode | undefined {
  const cpuset = readFileSync(`/proc/${pid}/cpuset`, 'utf8').trim();
  return slurm.nodes.find((n) => cpuset.startsWith(`${n.cgroupRoot['cpuset']}/`));
}

/** Waits for `count` processes named `comm` in the job's step cgroups. */
async function stepTasks(slurm: SlurmCluster, comm: string, count: number): Promise<number[]> {
  return waitFor(`${count} ${comm} tasks in Slurm steps`, 30_000, () => {
    const tasks = slurm.stepProcesses().filter((p) => p.comm === comm);
    return tasks.length === count ? tasks.map((p) => p.pid) : undefined;
  });
}

interface Held {
  runDir: string;
  netns: string[];
  cgroups: string[];
  steps: number[];
  tasks: number[];
  clients: number[];
}

/** hold-slurm.ts: a run with a running allocation, in a process of its own. */
function hold(t: Test): ReturnType<typeof heldByChild<Held>> {
  return heldByChild<Held>(t, HOLD, ['--hold']);
}

slurmTest(t, 'what a run killed outright left, the next run ends', { timeout: 120_000 }, async (t) => {
  const { child, held } = await hold(t);
  // its run directory is the one thing the next run cannot tell from a failed run's, kept on purpose
  t.teardown(() => rmSync(held.runDir, { recursive: true, force: true }));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  // PDEATHSIG ends its daemons and salloc; slurmstepd, the tasks and salloc's script are nobody's children
  t.ok(held.steps.length > 0 && held.steps.every(processAlive), 'its slurmstepd outlive it');
  t.ok(held.tasks.length === 2 && held.tasks.every(processAlive), 'so do its tasks');
  // salloc, its script and srun were all in the run's clients cgroup; salloc died with its parent
  t.ok(held.clients.length >= 3 && held.clients.some(processAlive), "and salloc's script and srun");

  const slurm = await startSlurm(t, { hosts: 1 });
  const left = [...held.steps, ...held.tasks, ...held.clients].filter(processAlive);
  t.same(left, [], "the next run ended them (found by the dead run's cgroups)");
  t.same(held.cgroups.filter(existsSync), [], 'and removed its cgroups');
  const names = ip('netns', 'list');
  t.same(
    held.netns.filter((n) => names.includes(n)),
    [],
    'so that its namespaces, empty now, were swept too',
  );
  t.same((await slurm.stop()).killed, [], 'the new run stops cleanly');
});

slurmTest(t, 'a Slurm cluster across the namespace hosts', { timeout: 240_000 }, async (t) => {
  const slurm = await startSlurm(t, { hosts: 3 });

  await t.test('sinfo shows each host as an idle node at its own address', async (t) => {
    const states = await slurm.nodeStates();
    t.same(Object.fromEntries(states), { host1: 'idle', host2: 'idle', host3: 'idle' }, 'three idle nodes');
    for (const node of slurm.nodes) {
      const line = await slurm.client(['scontrol', 'show', 'node', '--oneliner', node.name]);
      t.match(
        line,
        new RegExp(`NodeAddr=${node.host.address.replace(/\./g, '\\.')} `),
        `${node.name} at ${node.host.address}`,
      );
      t.match(line, new RegExp(` CPUTot=${node.cpuList.length} `), `${node.name} declares the host's ${node.cpus}`);
      t.ok(
        node.slurmd.running() && netnsOfPid(node.slurmd.pid) === netnsId(node.host.netns),
        `${node.name}'s slurmd runs in its host`,
      );
    }
    const one = await slurm.srunIn(['host2'], ['sh', '-c', 'echo "$SLURMD_NODENAME $SLURM_JOB_NUM_NODES"']);
    t.equal(one.stdout.trim(), 'host2 1', `srunIn runs a job of its own on the named host (${one.stderr.trim()})`);
    const config = await slurm.client(['scontrol', 'show', 'config']);
    t.comment(`this build: ${/MULTIPLE_SLURMD\s*=\s*\S+/.exec(config)?.[0] ?? 'MULTIPLE_SLURMD not set'}`);
  });

  await t.test("a step of salloc -N 3 -c 1 runs in its job's one-CPU cpuset, in its host", async (t) => {
    const probe = slurm.script(PROBE);
    const r = await slurm.salloc(ALLOC, `${STEP} ${probe}\n`);
    t.equal(r.code, 0, `salloc and its step succeed (stderr: ${r.stderr.trim()})`);
    t.match(r.jobId, /^\d+$/, 'salloc was granted an allocation');
    const lines = parseProbe(r.stdout).sort((a, b) => a.node.localeCompare(b.node));
    t.same(
      lines.map((l) => l.node),
      ['host1', 'host2', 'host3'],
      'one line per host',
    );
    for (const line of lines) {
      const node = slurm.node(line.node);
      t.ok(node.cpuList.length > 1, `${node.name} has ${node.cpus}, more than the job's one CPU`);
      t.equal(line.allowed.length, 1, `${node.name}: the step may use one CPU (${line.allowed.join(',')})`);
      t.ok(
        line.allowed.every((c) => node.cpuList.includes(c)),
        `${node.name}: that CPU is one of the host's (${node.cpus})`,
      );
      t.match(
        line.cpuset,
        stepCgroup(node, r.jobId),
        `${node.name}: its cpuset cgroup is the job's step (${line.cpuset})`,
      );
      t.same(
        line.cpusetCpus,
        line.allowed,
        `${node.name}: the cgroup read inside the step (/sys/fs/cgroup) says the same`,
      );
      t.same(
        line.addresses,
        ['lo=127.0.0.1/8', `eth0=${node.host.address}/24`],
        `${node.name}: the step sees its host's network`,
      );
      t.equal(line.jobMemoryLimit, 2048 * MIB, `${node.name}: the job's memory cgroup holds DefMemPerCPU × 1 CPU`);
    }
    await waitFor("the job's cgroups to be removed", 10_000, () => slurm.jobCgroups(r.jobId).length === 0).catch(
      () => undefined,
    );
    t.same(slurm.jobCgroups(r.jobId), [], "Slurm removed the job's cgroups when it ended");
  });

  await t.test('two allocations at once hold different CPUs of every host', async (t) => {
    const first = slurm.startSalloc(ALLOC, `${STEP} sleep 600\n`);
    await first.jobId;
    await stepTasks(slurm, 'sleep', 3);
    const probe = slurm.script(PROBE);
    const second = await slurm.salloc(ALLOC, `${STEP} ${probe}\n`);
    t.equal(second.code, 0, 'the second allocation is granted beside the first');
    const firstCpus = new Map<string, number[]>();
    for (const pid of await stepTasks(slurm, 'sleep', 3)) firstCpus.set(nodeOf(slurm, pid)!.name, cpusAllowed(pid));
    const lines = parseProbe(second.stdout);
    t.equal(lines.length, 3, 'the second job ran on every host');
    for (const line of lines) {
      const other = firstCpus.get(line.node) ?? [];
      t.equal(line.allowed.length, 1, `${line.node}: the second job may use one CPU`);
      t.notOk(
        line.allowed.some((c) => other.includes(c)),
        `${line.node}: not the first job's (${other.join(',')} vs ${line.allowed.join(',')})`,
      );
    }
    await slurm.client(['scancel', await first.jobId]);
    await waitFor(
      'the first allocation to end',
      CANCEL_BOUND_MS,
      () => !first.process.running() && slurm.stepProcesses().length === 0,
    );
  });

  await t.test("an unprivileged user's allocation: its step runs as that user, in its job's cpuset", async (t) => {
    const nobody = { uid: 65534, gid: 65534 };
    const line =
      'echo "$SLURMD_NODENAME|$(id -u)|$(cat /proc/self/cpuset)|$(grep Cpus_allowed_list /proc/self/status)"';
    const r = await slurm.salloc(ALLOC, `${STEP} sh -c '${line}'\n`, { user: nobody });
    t.equal(r.code, 0, `salloc as uid ${nobody.uid} and its step succeed (stderr: ${r.stderr.trim()})`);
    const lines = r.stdout.split('\n').filter((l) => l.includes('|'));
    t.equal(lines.length, 3, 'one line per host');
    for (const l of lines) {
      const [name, uid, cpuset, allowed] = l.split('|') as [string, string, string, string];
      const node = slurm.node(name);
      t.equal(uid, String(nobody.uid), `${name}: the task runs as the user`);
      t.match(cpuset, stepCgroup(node, r.jobId, nobody.uid), `${name}: in the user's job's step cgroup (${cpuset})`);
      t.equal(parseCpuList(allowed.split(/\s+/).pop()!).length, 1, `${name}: on one CPU`);
    }
  });

  await t.test(
    'one task per node, as rankd up --slurm starts its agents, in an allocation of more tasks',
    async (t) => {
      // salloc -n 4 exports SLURM_NTASKS=4, which a bare `srun --ntasks-per-node=1` inherits:
      // Slurm then ignores --ntasks-per-node ("can't honor") and runs 4 tasks, two on one node
      const line = 'echo "$SLURMD_NODENAME|$SLURM_CPUS_ON_NODE|$(grep Cpus_allowed_list /proc/self/status)"';
      const bare = await slurm.salloc(['--nodes=3', '--ntasks=4'], `${STEP} sh -c '${line}'\n`);
      t.equal(bare.stdout.split('\n').filter(Boolean).length, 4, 'a bare --ntasks-per-node=1 runs SLURM_NTASKS tasks');

      const perNode = 'srun --overlap --nodes=$SLURM_JOB_NUM_NODES --ntasks=$SLURM_JOB_NUM_NODES --ntasks-per-node=1';
      const r = await slurm.salloc(['--nodes=3', '--ntasks=4'], `${perNode} --cpu-bind=none sh -c '${line}'\n`);
      const lines = r.stdout.split('\n').filter(Boolean);
      t.same(
        lines.map((l) => l.split('|')[0]).sort(),
        ['host1', 'host2', 'host3'],
        'with --ntasks=$SLURM_JOB_NUM_NODES: one per node',
      );
      let total = 0;
      for (const l of lines) {
        const [name, onNode, allowed] = l.split('|') as [string, string, string];
        const cpus = parseCpuList(allowed.split(/\s+/).pop()!);
        total += cpus.length;
        t.equal(cpus.length, Number(onNode), `${name}: the task holds every CPU the job has there (${onNode})`);
      }
      t.equal(total, 4, "together, the job's 4 CPUs");
    },
  );

  await t.test("rankd facts, run in a step, reports the job's CPU as the only allowed one", async (t) => {
    const out = join(slurm.runDir, 'out');
    const facts = `${process.execPath} ${CLI} facts --json > ${out}/facts-$SLURMD_NODENAME.json`;
    const cpus = `sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > ${out}/cpus-$SLURMD_NODENAME`;
    const r = await slurm.salloc(ALLOC, `${STEP} sh -c '${facts}; ${cpus}'\n`);
    t.equal(r.code, 0, `the step ran (stderr: ${r.stderr.trim()})`);
    for (const node of slurm.nodes) {
      const doc = JSON.parse(readFileSync(join(out, `facts-${node.name}.json`), 'utf8')) as {
        cpu: { allowed: number[] };
      };
      const granted = parseCpuList(readFileSync(join(out, `cpus-${node.name}`), 'utf8'));
      t.equal(granted.length, 1, `${node.name}: the step holds one CPU`);
      t.same(doc.cpu.allowed, granted, `${node.name}: facts allow exactly that CPU (${granted.join(',')})`);
    }
  });

  await t.test(
    'an sbatch -N 3 script runs on host1, its step on every host, and its output is read back',
    async (t) => {
      const job = await slurm.sbatch(
        [
          'echo "batch on $SLURMD_NODENAME of $SLURM_JOB_NODELIST"',
          'srun --ntasks-per-node=1 sh -c \'echo "step on $SLURMD_NODENAME in $(cat /proc/self/cpuset)"\'',
          '',
        ].join('\n'),
        ALLOC,
      );
      t.equal(job.state, 'COMPLETED', 'the job completed');
      t.equal(job.exitCode, '0:0', 'with exit code 0');
      t.match(job.output, /^batch on host1 of host\[1-3\]$/m, 'the script ran on the first node');
      for (const node of slurm.nodes)
        t.match(job.output, stepCgroupLine(node, job.jobId), `its step ran on ${node.name}, in the job's cgroup`);
    },
  );

  await t.test('scancel of a running allocation ends its steps within the bound and leaves nothing', async (t) => {
    // each task also leaves a daemon of its own (setsid, reparented away from the step): the
    // step's freezer cgroup still holds it, and proctrack/cgroup ends it with the rest
    const alloc = slurm.startSalloc(ALLOC, `${STEP} sh -c 'setsid -f sleep 601; exec sleep 600'\n`);
    const jobId = await alloc.jobId;
    const all = await stepTasks(slurm, 'sleep', 6);
    const sleeps = all.filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('600'));
    const daemons = all.filter((pid) => !sleeps.includes(pid));
    t.equal(daemons.length, 3, 'three detached daemons run beside the tasks');
    const steps = await slurm.squeueSteps(jobId);
    t.ok(
      steps.some((s) => s.id === `${jobId}.0` && s.nodes === 'host[1-3]'),
      `squeue shows step ${jobId}.0 on host[1-3]`,
    );
    const seen = new Set<string>();
    for (const pid of sleeps) {
      const node = nodeOf(slurm, pid);
      if (!t.ok(node, `task ${pid} is in a node's cgroup`) || !node) continue;
      seen.add(node.name);
      t.equal(
        netnsOfPid(pid),
        netnsId(node.host.netns),
        `${node.name}'s task runs in ${node.name}'s network namespace`,
      );
      t.equal(cpusAllowed(pid).length, 1, `${node.name}'s task may use one CPU`);
    }
    t.equal(seen.size, 3, 'one task on each host');
    t.ok(slurm.jobCgroups(jobId).length > 0, 'the job has cgroups while it runs');

    const cancelled = Date.now();
    await slurm.client(['scancel', jobId]);
    const gone = await waitFor('the cancelled job to leave nothing', CANCEL_BOUND_MS + 5000, () =>
      slurm.stepProcesses().length === 0 && slurm.jobCgroups(jobId).length === 0 && !alloc.process.running()
        ? Date.now() - cancelled
        : undefined,
    );
    t.ok(
      gone < CANCEL_BOUND_MS,
      `steps, slurmstepd and cgroups gone ${gone} ms after scancel (bound ${CANCEL_BOUND_MS} ms)`,
    );
    t.notOk(sleeps.some(processAlive), 'no task survives');
    t.notOk(daemons.some(processAlive), 'nor any detached daemon of a task');
    t.match(alloc.process.stderr(), /revoked|cancelled|CANCELLED/i, 'salloc reports the revoked allocation');
    t.same(await slurm.squeueSteps(jobId), [], 'squeue shows no step of the job');
  });

  await t.test('stop() drains a running allocation and leaves no Slurm process and no cgroup', async (t) => {
    const alloc = slurm.startSalloc(ALLOC, `${STEP} sleep 600\n`);
    await alloc.jobId;
    const sleeps = await stepTasks(slurm, 'sleep', 3);
    const daemons = [slurm.slurmctld, ...slurm.nodes.map((n) => n.slurmd)];
    const namespaces = new Set([slurm.login, ...slurm.nodes.map((n) => n.host)].map((h) => netnsId(h.netns)));

    const report = await slurm.stop();
    t.same(report.killed, [], 'the drain ended every step: nothing had to be killed');
    t.same(report.cgroupsLeft, [], 'every cgroup of the run is removed');
    t.same(slurm.cgroups.dirs(), [], "not even the run's own");
    t.notOk(
      daemons.some((d) => processAlive(d.pid)),
      'slurmctld and every slurmd have exited (by the pids started)',
    );
    t.notOk(sleeps.some(processAlive), 'no task is left');
    const ours = slurmDaemonsOnMachine().filter(
      (p) =>
        (p.netns !== null && namespaces.has(p.netns)) ||
        p.cmdline.includes(slurm.runDir) ||
        p.environ.includes(slurm.confPath),
    );
    t.same(ours, [], 'no slurmctld, slurmd or slurmstepd of this run anywhere on the machine');
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    t.notOk(mounts.includes(slurm.runDir), "the hosts' cgroup mounts never reached the root mount namespace");
  });
});

function stepCgroupLine(node: SlurmNode, jobId: string): RegExp {
  return new RegExp(`^step on ${node.name} in ${stepCgroup(node, jobId).source.slice(1, -1)}$`, 'm');
}
