// `rankd up --slurm` on a real Slurm across the namespace hosts (harness/slurm.ts): slurmctld
// on the login namespace, where salloc's and sbatch's scripts run, and a slurmd per host,
// whose steps run in their host's namespace inside the job's cgroup (task/cgroup,
// ConstrainCores, cgroup v1 here and in CI). A `-c 1` job holds one of each host's 2 CPUs.
// Every test ends by proving that nothing of rankd is left on any host: no process of the
// built CLI for the job, no /tmp/rankd-JOBID, no rankd step in squeue.
import t, { type Test } from 'tap';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { CLI } from './harness/cluster.js';
import { parseCpuList } from './harness/slurm-cgroups.js';
import { slurmTest, startSlurm, type SlurmCluster, type SlurmNode } from './harness/slurm.js';
import { ip, ipQuiet } from './harness/commands.js';
import { waitFor } from './harness/wait.js';
import { splitLabelled } from './harness/labelled.js';
import { buildMpich } from '../mpi/helpers.js';

const ALLOC = ['--nodes=3', '--cpus-per-task=1', '--ntasks-per-node=1'];
/** The built CLI as a script calls it: no install, no PATH. */
const RANKD = `${process.execPath} ${CLI}`;
/** Bounds `rankd up --slurm`'s own waits, well inside the test's. */
const UP_TIMEOUT = '--timeout 40s';
/** After salloc or sbatch ended: Slurm ends the steps (SIGTERM, KillWait 30 s), each daemon removes its directory. */
const DRAIN_MS = 20_000;

/**
 * One line per rank: RANK | its host's eth0 address | Cpus_allowed_list | /proc/self/cpuset |
 * the cpuset.cpus of its Slurm job's cgroup (the step's parent), read inside the rank.
 */
const PROBE = String.raw`printf '%s|%s|%s|%s|%s\n' "$RANK" \
  "$(ip -4 -o addr show eth0 | awk '{ print $4 }')" \
  "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)" \
  "$(cat /proc/self/cpuset)" \
  "$(cat /sys/fs/cgroup/cpuset$(sed 's|/step_.*||' /proc/self/cpuset)/cpuset.cpus)"`;

interface RankLine {
  rank: number;
  address: string;
  allowed: number[];
  cpuset: string;
  jobCpus: number[];
}

function parseRanks(stdout: string): RankLine[] {
  return stdout
    .split('\n')
    .map((l) => l.replace(/^\d+: /, ''))
    .filter((l) => /^\d+\|/.test(l))
    .map((l) => {
      const [rank, address, allowed, cpuset, jobCpus] = l.split('|') as [string, string, string, string, string];
      return {
        rank: Number(rank),
        address: address.split('/')[0]!,
        allowed: parseCpuList(allowed),
        cpuset,
        jobCpus: parseCpuList(jobCpus),
      };
    })
    .sort((a, b) => a.rank - b.rank);
}

/** A shell word. */
function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function instanceDir(jobId: string): string {
  return `/tmp/rankd-${jobId}`;
}

/** Processes of the built CLI for this job: its instance dir in the argv, or the job's id in the environment. */
function rankdProcesses(jobId: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (!cmdline.includes(CLI)) continue;
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (cmdline.includes(instanceDir(jobId)) || environ.includes(`SLURM_JOB_ID=${jobId}`))
        out.push(`${entry}: ${cmdline}`);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function listing(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true }).map(String);
  } catch {
    return [];
  }
}

async function rankdStepsOf(slurm: SlurmCluster, jobId: string): Promise<string[]> {
  return (await slurm.squeueSteps(jobId)).filter((s) => s.name.startsWith('rankd-')).map((s) => `${s.id} ${s.name}`);
}

/** Waits (bounded) until nothing of rankd is left for the job, then asserts it. */
async function nothingLeft(t: Test, slurm: SlurmCluster, jobId: string): Promise<void> {
  const left = async () => ({
    processes: rankdProcesses(jobId),
    dir: existsSync(instanceDir(jobId)),
    steps: await rankdStepsOf(slurm, jobId),
  });
  const last = await waitFor(
    `nothing of rankd left for job ${jobId}`,
    DRAIN_MS,
    async () => {
      const l = await left();
      return l.processes.length === 0 && !l.dir && l.steps.length === 0 ? l : undefined;
    },
    200,
  ).catch(() => left());
  t.same(last.processes, [], `job ${jobId}: no rankd process is left on any host`);
  t.notOk(last.dir, `job ${jobId}: ${instanceDir(jobId)} is gone`, {
    left: last.dir ? listing(instanceDir(jobId)) : [],
  });
  t.same(last.steps, [], `job ${jobId}: squeue shows no rankd step`);
}

/** The cpuset.cpus of the rank's Slurm job cgroup (the step's parent), as "jobcpus=LIST". */
const JOB_CPUS = String.raw`echo "jobcpus=$(cat /sys/fs/cgroup/cpuset$(sed 's|/step_.*||' /proc/self/cpuset)/cpuset.cpus)"`;

/** The last lines of a kept instance's logs, for a failed assertion's diagnostics. */
function instanceLogs(dir: string): Record<string, string> {
  const tail = (file: string) => {
    try {
      return readFileSync(`${dir}/${file}`, 'utf8').split('\n').slice(-60).join('\n');
    } catch (err) {
      return (err as Error).message;
    }
  };
  return { instanceDir: dir, controllerLog: tail('controller.log'), agentsLog: tail('agents.log') };
}

/** The figure `rankd up --slurm` prints: "3 of 3 nodes ready in 2.1 s". */
function readyIn(stderr: string): string {
  return /(\d+ of \d+ nodes ready in [\d.]+ s)/.exec(stderr)?.[1] ?? 'no ready line';
}

slurmTest(t, 'rankd up --slurm in a real Slurm across three hosts', { timeout: 600_000 }, async (t) => {
  const slurm = await startSlurm(t, { hosts: 3 });

  await t.test("in the allocation: one rank per host, pinned inside the job's CPU there", async (t) => {
    const run = `${RANKD} run -N 3 --ranks-per-node 1 -- sh -c ${sq(PROBE)}`;
    const r = await slurm.salloc(ALLOC, `${RANKD} up --slurm ${UP_TIMEOUT} -- ${run}\n`, { timeoutMs: 120_000 });
    t.comment(`up --slurm: ${readyIn(r.stderr)}`);
    t.equal(r.code, 0, `salloc, rankd up and the job exit 0 (stderr: ${r.stderr.trim()})`);
    const ranks = parseRanks(r.stdout);
    t.same(
      ranks.map((l) => l.rank),
      [0, 1, 2],
      `three ranks (stdout: ${r.stdout.trim()})`,
    );
    const hosts = new Set<string>();
    for (const line of ranks) {
      const node = slurm.nodes.find((n) => n.host.address === line.address);
      if (!t.ok(node, `rank ${line.rank} runs in a host's namespace (${line.address})`) || !node) continue;
      hosts.add(node.name);
      const jobPath = `${node.cgroupRoot['cpuset']}/slurm_${node.name}/uid_0/job_${r.jobId}/`;
      t.ok(
        line.cpuset.startsWith(jobPath),
        `rank ${line.rank}: in job ${r.jobId}'s cgroup on ${node.name} (${line.cpuset})`,
      );
      t.equal(line.jobCpus.length, 1, `${node.name}: the job holds one CPU (${line.jobCpus.join(',')})`);
      t.ok(line.allowed.length > 0, `rank ${line.rank} may use some CPU`);
      t.ok(
        line.allowed.every((c) => line.jobCpus.includes(c)),
        `rank ${line.rank}: pinned inside the job's CPU (${line.allowed.join(',')} ⊆ ${line.jobCpus.join(',')})`,
      );
    }
    t.equal(hosts.size, 3, 'one rank on each host');
    await nothingLeft(t, slurm, r.jobId);
  });

  await t.test('an MPICH job across the three hosts: one world, every rank inside its job CPU', async (t) => {
    // CI installs MPICH (scripts/test-deps.sh); slurmTest runs only where the rig does
    const bin = buildMpich(t, ['allreduce']);
    // UCX_TLS=tcp,self: UCX otherwise uses shared memory between the namespace hosts
    const run = `${RANKD} run -N 3 --ranks-per-node 1 --timeout 60 --env UCX_TLS=tcp,self -- sh -c ${sq(
      `${JOB_CPUS}; echo "addr=$(ip -4 -o addr show eth0 | awk '{ print $4 }')"; exec ${bin['allreduce']!}`,
    )}`;
    // --keep, in the Slurm run's directory: a failure keeps both (the harness keeps a failed
    // run's directory) and shows the instance's logs; a success removes them with the run
    const kept = `${slurm.runDir}/work/instances`;
    const r = await slurm.salloc(
      ALLOC,
      `mkdir -p ${kept} && ${RANKD} up --slurm --keep --work-dir ${kept}/$SLURM_JOB_ID ${UP_TIMEOUT} -- ${run}\n`,
      { timeoutMs: 120_000 },
    );
    t.comment(`up --slurm: ${readyIn(r.stderr)}`);
    t.equal(
      r.code,
      0,
      `salloc, rankd up and the MPI job exit 0 (stderr: ${r.stderr.trim()})`,
      r.code === 0 ? {} : instanceLogs(`${kept}/${r.jobId}`),
    );
    const { byRank } = splitLabelled(r.stdout);
    const hosts = new Set<string>();
    for (const rank of [0, 1, 2]) {
      const out = byRank.get(rank) ?? [];
      const jobCpus = parseCpuList(/^jobcpus=(.*)$/m.exec(out.join('\n'))?.[1] ?? '');
      const address = /^addr=([\d.]+)/m.exec(out.join('\n'))?.[1] ?? '?';
      const mpi = /^rank=(\d+) size=(\d+) sum=(\d+) cpus=(\S+) /m.exec(out.join('\n'));
      if (!t.ok(mpi, `rank ${rank} printed its allreduce (its lines: ${JSON.stringify(out)})`) || !mpi) continue;
      const [, mpiRank, size, sum, cpus] = mpi as unknown as [string, string, string, string, string];
      const host = slurm.nodes.find((n) => n.host.address === address)?.name ?? `no host at ${address}`;
      t.equal(Number(mpiRank), rank, `rankd's rank ${rank} is MPI rank ${mpiRank}`);
      t.equal(`${size} ${sum}`, '3 3', `rank ${rank}: a world of 3, the allreduce summed 3`);
      t.equal(jobCpus.length, 1, `rank ${rank}: its job holds one CPU on ${host} (${jobCpus.join(',')})`);
      t.ok(
        parseCpuList(cpus).every((c) => jobCpus.includes(c)),
        `rank ${rank}: still inside the job's CPU after MPI_Init (${cpus} ⊆ ${jobCpus.join(',')})`,
      );
      hosts.add(host);
    }
    t.equal(hosts.size, 3, `one rank on each host (${[...hosts].join(', ')})`);
    await nothingLeft(t, slurm, r.jobId);
  });

  await t.test("a failing rank's exit status passes through salloc", async (t) => {
    const run = `${RANKD} run -N 3 --ranks-per-node 1 -- sh -c 'test "$RANK" != 2 || exit 7'`;
    const r = await slurm.salloc(ALLOC, `${RANKD} up --slurm ${UP_TIMEOUT} -- ${run}\n`, { timeoutMs: 120_000 });
    t.comment(`up --slurm: ${readyIn(r.stderr)}`);
    t.equal(r.code, 7, `rank 2's exit 7 is rankd run's, rankd up's and salloc's (stderr: ${r.stderr.trim()})`);
    await nothingLeft(t, slurm, r.jobId);
  });
});

slurmTest(t, 'rankd up --slurm --detach, in salloc and under sbatch', { timeout: 600_000 }, async (t) => {
  const slurm = await startSlurm(t, { hosts: 3 });
  const steps = [
    `${RANKD} run -q -N 3 --ranks-per-node 1 -- sh -c 'echo "step1 $RANK"'`,
    `${RANKD} run -q -N 3 --ranks-per-node 1 -- sh -c 'echo "step2 $RANK"'`,
  ];

  await t.test('--detach, two rankd run steps, then exit without rankd down: nothing is left', async (t) => {
    const script = [
      `eval "$(${RANKD} up --slurm --detach ${UP_TIMEOUT})" || exit 99`,
      'echo "home=$RANKD_HOME"',
      ...steps,
      `${RANKD} nodes --json > nodes.json`,
      `cp nodes.json "${slurm.runDir}/out/nodes-$SLURM_JOB_ID.json"`,
      'exit 0',
      '',
    ].join('\n');
    const r = await slurm.salloc(ALLOC, script, { timeoutMs: 120_000 });
    t.comment(`up --slurm --detach: ${readyIn(r.stderr)}`);
    t.equal(r.code, 0, `the script ran to its end (stderr: ${r.stderr.trim()})`);
    t.match(r.stdout, new RegExp(`^home=/tmp/rankd-${r.jobId}$`, 'm'), "the eval set RANKD_HOME to the job's dir");
    for (const step of ['step1', 'step2'])
      t.same(
        r.stdout
          .split('\n')
          .filter((l) => l.includes(step))
          .map((l) => l.replace(/^\d+: /, ''))
          .sort(),
        [0, 1, 2].map((k) => `${step} ${k}`),
        `${step}: three ranks`,
      );
    const { nodes } = JSON.parse(readFileSync(`${slurm.runDir}/out/nodes-${r.jobId}.json`, 'utf8')) as {
      nodes: Array<{ name: string; state: string }>;
    };
    t.same(
      nodes.map((n) => `${n.name} ${n.state}`).sort(),
      ['host1 ready', 'host2 ready', 'host3 ready'],
      'rankd nodes: host1..3, ready',
    );
    await nothingLeft(t, slurm, r.jobId);
  });

  await t.test('rankd down inside the allocation ends the instance, not the allocation', async (t) => {
    const script = [
      `eval "$(${RANKD} up --slurm --detach ${UP_TIMEOUT})" || exit 99`,
      `${RANKD} down; echo "down=$?"`,
      'echo "steps=$(squeue --steps --jobs=$SLURM_JOB_ID --noheader --format=%j | grep -c rankd-)"',
      'test -e "$RANKD_HOME" && echo "dir=left" || echo "dir=gone"',
      'srun --overlap --ntasks-per-node=1 --cpu-bind=none sh -c \'echo "after $SLURMD_NODENAME"\' | sort',
      '',
    ].join('\n');
    const r = await slurm.salloc(ALLOC, script, { timeoutMs: 120_000 });
    t.equal(r.code, 0, `the script ran to its end (stderr: ${r.stderr.trim()})`);
    t.match(r.stdout, /^down=0$/m, 'rankd down exits 0');
    t.match(r.stdout, /^steps=0$/m, 'no rankd step is left in squeue right after it');
    t.match(r.stdout, /^dir=gone$/m, 'the instance dir is gone');
    t.match(r.stdout, /^after host1\nafter host2\nafter host3$/m, 'the allocation still runs an srun on every host');
    await nothingLeft(t, slurm, r.jobId);
  });

  await t.test('under sbatch: --detach and two rankd run steps, the job COMPLETED 0:0', async (t) => {
    const script = [`eval "$(${RANKD} up --slurm --detach ${UP_TIMEOUT})" || exit 99`, ...steps, ''].join('\n');
    const job = await slurm.sbatch(script, ALLOC, { timeoutMs: 120_000 });
    // the job's id is this run's own (FirstJobId): whatever a failure leaves is ours to remove
    t.teardown(() => rmSync(instanceDir(job.jobId), { recursive: true, force: true }));
    t.comment(`up --slurm --detach under sbatch: ${readyIn(job.output)}`);
    t.equal(job.state, 'COMPLETED', `the job completed (output: ${job.output})`);
    t.equal(job.exitCode, '0:0', 'exit code 0:0');
    for (const step of ['step1', 'step2'])
      t.same(
        job.output
          .split('\n')
          .filter((l) => l.includes(step))
          .map((l) => l.replace(/^\d+: /, ''))
          .sort(),
        [0, 1, 2].map((k) => `${step} ${k}`),
        `${step}: three ranks, in the job's output`,
      );
    // the batch step's end SIGKILLs its processes, rankd's sruns among them, and a killed srun's
    // shepherd SIGKILLs its step: only the trap that `up` printed ends the instance in time
    t.match(job.output, /in a batch script the instance ends with it/, 'up said how the instance ends');
    await nothingLeft(t, slurm, job.jobId);
  });

  await t.test('under sbatch: rankd down before the end, then the trap finds nothing to end', async (t) => {
    const script = [
      `eval "$(${RANKD} up --slurm --detach ${UP_TIMEOUT})" || exit 99`,
      steps[0]!,
      `${RANKD} down; echo "down=$?"`,
      'exit 3',
      '',
    ].join('\n');
    const job = await slurm.sbatch(script, ALLOC, { timeoutMs: 120_000 });
    t.teardown(() => rmSync(instanceDir(job.jobId), { recursive: true, force: true }));
    t.match(job.output, /^down=0$/m, `rankd down exits 0 (output: ${job.output})`);
    t.equal(job.exitCode, '3:0', "the script's own exit status stands, the trap's does not replace it");
    t.notMatch(job.output, /holds no instance/, 'the trap did not run rankd down a second time');
    await nothingLeft(t, slurm, job.jobId);
  });
});

slurmTest(
  t,
  'rankd up --slurm: a second up attaches, a plan beyond the cgroup is refused',
  { timeout: 300_000 },
  async (t) => {
    const slurm = await startSlurm(t, { hosts: 3 });
    const ran = `${slurm.runDir}/out/ran`;
    const elsewhere = `${slurm.runDir}/out/elsewhere`;
    const script = [
      `eval "$(${RANKD} up --slurm --detach ${UP_TIMEOUT})" || exit 99`,
      'echo "first=export RANKD_HOME=$RANKD_HOME"',
      `echo "second=$(${RANKD} up --slurm --detach ${UP_TIMEOUT})"`,
      'echo "steps=$(squeue --steps --jobs=$SLURM_JOB_ID --noheader --format=%j | grep -c rankd-)"',
      // another node of the allocation, whose /tmp holds no instance: here, another --work-dir
      `${RANKD} up --slurm --detach --work-dir ${elsewhere} ${UP_TIMEOUT}; echo "elsewhere=$?"`,
      `test -e ${elsewhere} && echo "elsewhere-dir=left" || echo "elsewhere-dir=gone"`,
      `${RANKD} run -N 3 --ranks-per-node 2 -- sh -c 'touch ${ran}-$SLURM_JOB_ID-$RANK'; echo "overask=$?"`,
      `${RANKD} down`,
      '',
    ].join('\n');
    const r = await slurm.salloc(ALLOC, script, { timeoutMs: 120_000 });
    t.equal(r.code, 0, `the script ran to its end (stderr: ${r.stderr.trim()})`);
    const first = /^first=(.*)$/m.exec(r.stdout)?.[1];
    t.equal(first, `export RANKD_HOME=/tmp/rankd-${r.jobId}`, 'the first up printed the export line');
    t.match(r.stdout, new RegExp(`^second=${first}$`, 'm'), 'the second up printed the same line');
    t.match(r.stderr, /already has a rankd instance/, 'and said it attached');
    t.match(r.stdout, /^steps=2$/m, 'squeue shows 2 rankd steps, not 4');
    t.match(r.stdout, /^elsewhere=69$/m, 'an up whose directory holds no instance, while the job has one, exits 69');
    t.match(
      r.stderr,
      /already runs rankd's steps \d+\.\d+ \d+\.\d+, but \S+elsewhere holds no instance.*RANKD_INSTANCE_ELSEWHERE/,
      'naming the steps and its directory',
    );
    t.match(r.stdout, /^elsewhere-dir=gone$/m, 'and leaves no directory of its own');
    t.match(r.stdout, /^overask=65$/m, 'the plan beyond the cgroup is refused (65)');
    t.match(
      r.stderr,
      /node host\d: 2 ranks but only 1 allowed core .*\(RANKD_PLAN_TOO_MANY_RANKS\)/,
      "the refusal names the node and its cgroup's one core",
    );
    t.comment(
      `refusal: ${r.stderr
        .split('\n')
        .filter((l) => /allowed|cpu/i.test(l))
        .join(' / ')}`,
    );
    t.same(
      readdirSync(`${slurm.runDir}/out`).filter((f) => f.startsWith(`ran-${r.jobId}-`)),
      [],
      'no rank of it ran',
    );
    await nothingLeft(t, slurm, r.jobId);

    await t.test('an instance directory left by --keep is refused, and nothing starts over it', async (t) => {
      const dir = `${slurm.runDir}/out/kept`;
      const script = [
        `eval "$(${RANKD} up --slurm --detach --keep --work-dir ${dir} ${UP_TIMEOUT})" || exit 99`,
        `${RANKD} down --keep; echo "down=$?"`,
        `${RANKD} up --slurm --detach --work-dir ${dir} ${UP_TIMEOUT}; echo "again=$?"`,
        'echo "steps=$(squeue --steps --jobs=$SLURM_JOB_ID --noheader --format=%j | grep -c rankd-)"',
        '',
      ].join('\n');
      const r = await slurm.salloc(ALLOC, script, { timeoutMs: 120_000 });
      t.match(r.stdout, /^down=0$/m, 'rankd down --keep kept the directory');
      t.match(r.stdout, /^again=70$/m, `a new up over it exits 70 (stderr: ${r.stderr.trim()})`);
      t.match(
        r.stderr,
        new RegExp(
          `${dir} holds an instance that does not answer \\(job ${r.jobId}, started [^)]+\\).*RANKD_INSTANCE_DIR_LEFT`,
        ),
        'naming the directory and the instance it held',
      );
      t.match(r.stdout, /^steps=0$/m, 'and starts no step');
      t.ok(existsSync(`${dir}/controller.log`), 'the kept logs are still there');
      await nothingLeft(t, slurm, r.jobId);
    });
  },
);

slurmTest(
  t,
  'rankd up --slurm: a node whose agent cannot reach the controller, and scancel',
  { timeout: 300_000 },
  async (t) => {
    const slurm = await startSlurm(t, { hosts: 3 });
    const [host1, , host3] = slurm.nodes as [SlurmNode, SlurmNode, SlurmNode];

    await t.test(
      'host3 cannot reach host1: named, exit 69, nothing left; --allow-partial goes on with 2',
      async (t) => {
        // a real fault, in host3 alone: its packets to host1 (where the controller runs) go nowhere
        ip('-n', host3.host.netns, 'route', 'add', 'blackhole', `${host1.host.address}/32`);
        t.teardown(() => ipQuiet('-n', host3.host.netns, 'route', 'del', 'blackhole', `${host1.host.address}/32`));
        const strict = await slurm.salloc(ALLOC, `${RANKD} up --slurm --detach --timeout 15s\necho "up=$?"\n`, {
          timeoutMs: 120_000,
        });
        t.match(strict.stdout, /^up=69$/m, `up exits 69 (stderr: ${strict.stderr.trim()})`);
        t.match(strict.stderr, /host3: no agent ready within 15 s \(RANKD_NODES_NOT_READY\)/, 'naming host3');
        t.notMatch(strict.stdout, /export RANKD_HOME/, 'and prints no export line');
        await nothingLeft(t, slurm, strict.jobId);

        const partial = await slurm.salloc(
          ALLOC,
          [
            `eval "$(${RANKD} up --slurm --detach --timeout 15s --allow-partial)" || exit 99`,
            `${RANKD} run -q -N 2 --ranks-per-node 1 -- sh -c 'echo "on $(ip -4 -o addr show eth0 | awk "{ print \\$4 }")"'`,
            `${RANKD} down`,
            '',
          ].join('\n'),
          { timeoutMs: 120_000 },
        );
        t.equal(partial.code, 0, `--allow-partial: the script ran to its end (stderr: ${partial.stderr.trim()})`);
        t.match(partial.stderr, /going on without host3 \(--allow-partial\)/, 'it says it goes on without host3');
        t.match(partial.stderr, /2 of 3 nodes ready/, 'with 2 of 3 nodes');
        t.same(
          partial.stdout
            .split('\n')
            .filter((l) => l.includes('on '))
            .map((l) => l.replace(/^\d+: on /, '').split('/')[0])
            .sort(),
          [host1.host.address, slurm.nodes[1]!.host.address],
          'a job runs on host1 and host2',
        );
        await nothingLeft(t, slurm, partial.jobId);
      },
    );

    await t.test('a controller not ready within --timeout: named, exit 69, nothing left', async (t) => {
      // no controller answers within 100 ms: node alone takes longer to start
      const r = await slurm.salloc(ALLOC, `${RANKD} up --slurm --detach --timeout 100ms\necho "up=$?"\n`, {
        timeoutMs: 120_000,
      });
      t.match(r.stdout, /^up=69$/m, `up exits 69 (stderr: ${r.stderr.trim()})`);
      t.match(
        r.stderr,
        /host1: the controller was not ready within 0\.1 s \(RANKD_NODES_NOT_READY\); see \S+controller\.log/,
        'naming host1 and its log, not an internal error',
      );
      await nothingLeft(t, slurm, r.jobId);
    });

    await t.test(
      'scancel of the allocation while rankd up --slurm runs in the foreground leaves nothing',
      async (t) => {
        const alloc = slurm.startSalloc(ALLOC, `${RANKD} up --slurm ${UP_TIMEOUT}\n`);
        const jobId = await alloc.jobId;
        await waitFor('rankd up --slurm to be ready', 60_000, () => /nodes ready in/.test(alloc.process.stderr()));
        t.comment(`up --slurm (foreground): ${readyIn(alloc.process.stderr())}`);
        t.ok(existsSync(instanceDir(jobId)), 'the instance runs');
        await slurm.client(['scancel', jobId]);
        await waitFor('salloc to end', 30_000, () => !alloc.process.running());
        await nothingLeft(t, slurm, jobId);
      },
    );
  },
);
