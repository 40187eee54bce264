// A real Slurm cluster across the namespace hosts: slurmctld in the controller's namespace
// (which is also the login node where salloc and sbatch run), one slurmd per host
// (`slurmd -D -N hostN`, NodeAddr = the host's 10.77.<n>.<k>), every daemon a child of this
// test known by its pid, every file in the run's directory, and steps confined by Slurm's
// own cgroups (task/cgroup + proctrack/cgroup on cgroup v1; see slurm-cgroups.ts).
//
//   const slurm = await startSlurm(t, { hosts: 3 });
//   const r = await slurm.salloc(['-N', '3', '-c', '1', '--ntasks-per-node=1'],
//     'srun --overlap --ntasks-per-node=1 --cpu-bind=none cat /proc/self/cpuset\n');
//   // r.stdout: /rankd-slurm-<n>-<pid>/host1/slurm_host1/uid_0/job_<r.jobId>/step_0 …
//   const job = await slurm.sbatch('srun hostname\n', ['-N', '3']); // job.state, job.output
//   await slurm.stop(); // { killed: [], cgroupsLeft: [] }
//
// Authentication is auth/none and cred/none. Every daemon and client runs on this one
// machine as root, in network namespaces that share the filesystem: munge would work too
// (one munged, its socket on the shared /run), but would prove nothing more here and adds a
// daemon and a key. Nothing outside the run's namespaces can reach these daemons (the
// guard route of network.ts).
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { Cluster } from './cluster.js';
import { netnsPids, which } from './commands.js';
import { createNetwork, type Namespace, type Network } from './network.js';
import { spawnInNetns, type NsProcess } from './ns-process.js';
import {
  cgroupV1Hierarchies,
  type Hierarchy,
  parseCpuList,
  RunCgroups,
  SLURM_SUBSYSTEMS,
  slurmCgroupsUnsupported,
  sleepSync,
  sweepStaleCgroups,
  withCgroupView,
} from './slurm-cgroups.js';
import { processAlive } from '../../helpers/cluster.js';
import { clusterTest, clusterUnsupported, IN_CI } from './requirements.js';
import { registerCleanup } from './teardown.js';
import { waitFor } from './wait.js';

export const SLURM_PROGRAMS = [
  'slurmctld',
  'slurmd',
  'slurmstepd',
  'salloc',
  'sbatch',
  'srun',
  'sinfo',
  'squeue',
  'scancel',
  'scontrol',
];
/** The controller's and each slurmd's port: every namespace has its own ports. */
const SLURMCTLD_PORT = 6817;
const SLURMD_PORT = 6818;
const READY_TIMEOUT_MS = 30_000;
const CLIENT_TIMEOUT_MS = 60_000;
const DRAIN_TIMEOUT_MS = 20_000;
/** What an allocation waits for resources before it gives up (salloc/srun --immediate). */
export const IMMEDIATE_S = 10;
const TERMINAL_JOB_STATES = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMEOUT',
  'NODE_FAIL',
  'OUT_OF_MEMORY',
  'PREEMPTED',
  'BOOT_FAIL',
  'DEADLINE',
]);

export interface SlurmOptions {
  /** Cores declared per node (Sockets=1 CoresPerSocket=N ThreadsPerCore=1); default: the CPUs of each host's cpuset. */
  coresPerNode?: number;
  /** Each host's cpuset, which Slurm's cgroups inherit (e.g. "0-1"); default the test process's. */
  hostCpus?: string;
  /** RealMemory per node, MiB. Default 4096; a job gets DefMemPerCPU = this / cores per CPU it holds. */
  realMemoryMb?: number;
}

export interface SlurmNode {
  /** NodeName, the host's name: host1… */
  name: string;
  host: Namespace;
  slurmd: NsProcess;
  /** The host's cpuset, as Slurm sees it ("0-1"), and parsed. */
  cpus: string;
  cpuList: number[];
  /** The host's root cgroup for Slurm, per hierarchy (cgroup paths, as /proc/PID/cgroup shows them). */
  cgroupRoot: Record<string, string>;
}

/** How a client command runs. */
export interface ClientOptions {
  /** The namespace it runs in: the login node (the controller's namespace) by default. */
  in?: Namespace;
  /** More environment (on top of the test's, without its SLURM_*, and SLURM_CONF). */
  env?: NodeJS.ProcessEnv;
  /** SIGKILLed after this (default 60 s). */
  timeoutMs?: number;
  /**
   * Runs it as this user (setpriv, after it joined the clients cgroup): auth/none takes the
   * caller's uid, so the job and its tasks are that user's, as for a user on a real cluster.
   */
  user?: { uid: number; gid: number };
}

export interface ClientResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface BatchResult {
  jobId: string;
  /** JobState at its end: COMPLETED, FAILED, CANCELLED… */
  state: string;
  /** ExitCode as Slurm reports it, "0:0" (code:signal). */
  exitCode: string;
  /** The script's stdout and stderr (`-o`), as the batch host wrote it. */
  output: string;
}

export interface StepView {
  /** "<job>.<step>", or "<job>.batch"/"<job>.extern". */
  id: string;
  name: string;
  nodes: string;
}

export interface SlurmProcess {
  pid: number;
  comm: string;
  netns: string | null;
}

export interface StopReport {
  /** Processes that were still there after the drain and had to be killed. */
  killed: SlurmProcess[];
  /** Cgroup directories of the run that could not be removed. */
  cgroupsLeft: string[];
}

export class SlurmCluster {
  readonly nodes: SlurmNode[] = [];
  slurmctld!: NsProcess;
  readonly confPath: string;
  /** Where salloc, sbatch and the other clients run: the controller's namespace, as a login node. */
  readonly login: Namespace;
  private readonly clients = new Set<NsProcess>();
  private scripts = 0;
  private stopped: Promise<StopReport> | null = null;
  /** Runs the processes' cleanup: ends whatever of the run still runs. */
  private readonly endProcesses: () => void;
  /** Runs the run directory's cleanup: removes it unless it is to be kept. */
  private readonly removeRunDir: () => void;
  private keepRunDir = process.env['RANKD_CLUSTER_KEEP'] === '1';

  constructor(
    readonly net: Network,
    readonly runDir: string,
    readonly cgroups: RunCgroups,
    /** Whether the network was made for this run (and is removed with it). */
    private readonly ownNetwork: boolean,
  ) {
    this.confPath = join(runDir, 'slurm.conf');
    this.login = net.controller;
    // last resorts for an interrupted process (no await possible there), newest first: the
    // processes go before their directory. stop() runs endProcesses, close() removeRunDir,
    // so a failed test's logs are still there when close() is told to keep them.
    this.removeRunDir = registerCleanup(`slurm run dir ${runDir}`, () => {
      if (!this.keepRunDir) rmSync(runDir, { recursive: true, force: true });
    });
    this.endProcesses = registerCleanup(`slurm in ${net.cidr}`, () => this.killEverything());
  }

  /** stop(), then removes the network this run made and (unless `keepRunDir`) the run's directory. */
  async close(keepRunDir = false): Promise<StopReport> {
    const report = await this.stop();
    if (this.ownNetwork) this.net.teardown();
    this.keepRunDir ||= keepRunDir;
    this.removeRunDir();
    return report;
  }

  /**
   * Environment for Slurm clients: SLURM_CONF points at this run's configuration, and no
   * other SLURM_* of the test's own environment (a test run inside a Slurm job would
   * otherwise hand its job's id and options to every salloc and srun here).
   */
  get env(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const key of Object.keys(process.env)) if (key.startsWith('SLURM_')) env[key] = undefined;
    return { ...env, SLURM_CONF: this.confPath };
  }

  node(name: string): SlurmNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no Slurm node ${name} in this run`);
    return n;
  }

  /**
   * Starts a command with SLURM_CONF set, on the login node or in a host's namespace, in the
   * run's clients cgroup: what it starts (salloc's script, its srun) is then known to be this
   * run's even after a SIGKILL of the test. The command joins the cgroup itself, before its
   * exec. Writing its pid from here races with it: the migration waits for the cgroup
   * threadgroup lock (an RCU grace period), and salloc was seen to fork its script first, 2
   * runs in 8, leaving the script and srun out. Inside `ip netns exec` /sys is remounted,
   * so the cgroup file is reached through this process's root (/proc/PID/root).
   */
  spawn(argv: string[], opts: ClientOptions = {}): NsProcess {
    const procs = `/proc/${process.pid}/root${this.cgroups.clientsProcs}`;
    const as = opts.user
      ? ['setpriv', `--reuid=${opts.user.uid}`, `--regid=${opts.user.gid}`, '--clear-groups', '--']
      : [];
    const joined = ['/bin/sh', '-c', 'echo $$ > "$1" && shift && exec "$@"', 'slurm-client', procs, ...as, ...argv];
    const proc = spawnInNetns((opts.in ?? this.login).netns, joined, {
      env: { ...this.env, ...opts.env },
      cwd: join(this.runDir, 'work'),
    });
    this.clients.add(proc);
    void proc.exited.then(() => this.clients.delete(proc));
    return proc;
  }

  /** Runs a command to its end (SIGKILLed after timeoutMs), on the login node unless `in` says where. */
  async run(argv: string[], opts: ClientOptions = {}): Promise<ClientResult> {
    const proc = this.spawn(argv, opts);
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? CLIENT_TIMEOUT_MS);
    const exit = await proc.exited;
    clearTimeout(timer);
    return { code: exit.code, signal: exit.signal, stdout: proc.stdout(), stderr: proc.stderr() };
  }

  /** Runs a Slurm client and returns its stdout; throws with its stderr when it fails. */
  async client(argv: string[], timeoutMs = CLIENT_TIMEOUT_MS): Promise<string> {
    const r = await this.run(argv, { timeoutMs });
    if (r.code !== 0) throw new Error(`${argv.join(' ')}: exit ${r.code ?? r.signal}: ${r.stderr.trim()}`);
    return r.stdout;
  }

  /** Writes a shell script into the run's directory and returns its path. */
  script(text: string): string {
    const file = join(this.runDir, 'scripts', `script-${++this.scripts}.sh`);
    writeFileSync(file, text.startsWith('#!') ? text : `#!/bin/sh\n${text}`);
    chmodSync(file, 0o755);
    return file;
  }

  /**
   * `salloc ARGS… SCRIPT` on the login node, to its end: the script runs there, inside the
   * allocation, and its `srun` steps run on the nodes. --immediate bounds the wait for nodes.
   */
  async salloc(args: string[], script: string, opts: ClientOptions = {}): Promise<ClientResult & { jobId: string }> {
    const r = await this.run(['salloc', ...withImmediate(args), this.script(script)], opts);
    return { ...r, jobId: grantedJob(r.stderr) ?? '' };
  }

  /** `salloc ARGS… SCRIPT` started and left running: for tests that act during the allocation. */
  startSalloc(
    args: string[],
    script: string,
    opts: ClientOptions = {},
  ): { process: NsProcess; jobId: Promise<string> } {
    const proc = this.spawn(['salloc', ...withImmediate(args), this.script(script)], opts);
    const jobId = waitFor('salloc to be granted an allocation', (IMMEDIATE_S + 10) * 1000, () => {
      const id = grantedJob(proc.stderr());
      if (id) return id;
      if (!proc.running()) throw new Error(`salloc ended before its allocation: ${proc.output()}`);
      return undefined;
    });
    return { process: proc, jobId };
  }

  /** `sbatch ARGS… SCRIPT`: the job's id. Its output goes to `<runDir>/out/slurm-<id>.out`. */
  async submit(script: string, args: string[] = [], opts: ClientOptions = {}): Promise<string> {
    const out = join(this.runDir, 'out', 'slurm-%j.out');
    const argv = ['sbatch', '--parsable', `--output=${out}`, ...args, this.script(script)];
    const r = await this.run(argv, opts);
    if (r.code !== 0) throw new Error(`${argv.join(' ')}: exit ${r.code ?? r.signal}: ${r.stderr.trim()}`);
    const stdout = r.stdout;
    const id = stdout.trim().split(';')[0]!;
    if (!/^\d+$/.test(id)) throw new Error(`sbatch printed no job id: ${stdout}`);
    return id;
  }

  /** `sbatch`, then waits for the job to end and reads its output. */
  async sbatch(script: string, args: string[] = [], opts: ClientOptions = {}): Promise<BatchResult> {
    const jobId = await this.submit(script, args, opts);
    return this.waitForJob(jobId, opts.timeoutMs);
  }

  /** Waits for a job to reach a terminal state; its output when it was a batch job. */
  async waitForJob(jobId: string, timeoutMs = CLIENT_TIMEOUT_MS): Promise<BatchResult> {
    const job = await waitFor(
      `Slurm job ${jobId} to end`,
      timeoutMs,
      async () => {
        const fields = await this.jobFields(jobId);
        return TERMINAL_JOB_STATES.has(fields['JobState'] ?? '') ? fields : undefined;
      },
      100,
    );
    let output = '';
    try {
      output = readFileSync(join(this.runDir, 'out', `slurm-${jobId}.out`), 'utf8');
    } catch {
      // not a batch job, or it wrote nothing
    }
    return { jobId, state: job['JobState']!, exitCode: job['ExitCode'] ?? '', output };
  }

  /** `scontrol show job -o ID` as key → value (JobState, ExitCode, NodeList…). */
  async jobFields(jobId: string): Promise<Record<string, string>> {
    const line = await this.client(['scontrol', 'show', 'job', '-o', jobId]);
    const fields: Record<string, string> = {};
    for (const m of line.trim().matchAll(/(\S+?)=(\S*)/g)) fields[m[1]!] ??= m[2]!;
    return fields;
  }

  /** `srun` on the named hosts, one task each, as a job of its own (bounded by --immediate). */
  srunIn(hosts: string[], argv: string[], opts: ClientOptions & { args?: string[] } = {}): Promise<ClientResult> {
    const srun = [
      'srun',
      `--immediate=${IMMEDIATE_S}`,
      `--nodelist=${hosts.join(',')}`,
      `--nodes=${hosts.length}`,
      '--ntasks-per-node=1',
      ...(opts.args ?? []),
      ...argv,
    ];
    return this.run(srun, opts);
  }

  /** The running steps of a job (none once it has ended). */
  async squeueSteps(jobId: string): Promise<StepView[]> {
    const r = await this.run(['squeue', '--noheader', '--steps', `--jobs=${jobId}`, '--format=%i|%j|%N']);
    // a job that has left the controller's tables is an "Invalid job id": it has no steps
    if (r.code !== 0 && /Invalid job id/i.test(r.stderr)) return [];
    if (r.code !== 0) throw new Error(`squeue --steps --jobs=${jobId}: exit ${r.code ?? r.signal}: ${r.stderr.trim()}`);
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [id, name, nodes] = l.trim().split('|');
        return { id: id!, name: name!, nodes: nodes! };
      });
  }

  /** Ids of the jobs still pending, running or completing. */
  async jobs(): Promise<string[]> {
    const out = await this.client(['squeue', '--noheader', '--format=%i']);
    return out
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  }

  /** `sinfo` per node: name → state (idle, alloc, mix, down…). */
  async nodeStates(): Promise<Map<string, string>> {
    const out = await this.client(['sinfo', '--noheader', '--Node', '--format=%N %T'], 5000);
    return new Map(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => l.trim().split(/\s+/) as [string, string]),
    );
  }

  /** The cgroup directories of a job in the run's tree, on any node, in any hierarchy. */
  jobCgroups(jobId: string): string[] {
    return this.cgroups.jobDirs(jobId);
  }

  /**
   * Slurm processes of this run other than its daemons: every process in the run's cgroups
   * (slurmstepd and the tasks) and every slurmstepd in the run's namespaces. slurmstepd
   * rewrites its command line ("slurmstepd: [4.0]"), so it is recognised by the namespace it
   * runs in, which exists for this run only.
   */
  stepProcesses(): SlurmProcess[] {
    const pids = new Set(this.cgroups.pids());
    for (const ns of [this.login, ...this.nodes.map((n) => n.host)])
      for (const pid of netnsPids(ns.netns)) if (comm(pid) === 'slurmstepd') pids.add(pid);
    return [...pids].map(describe).filter((p): p is SlurmProcess => p !== null);
  }

  /** slurmctld's helper (it runs scripts for it), left behind only when slurmctld was killed. */
  private scriptDaemons(): SlurmProcess[] {
    return netnsPids(this.login.netns)
      .filter((pid) => comm(pid) === 'slurmscriptd')
      .map(describe)
      .filter((p): p is SlurmProcess => p !== null);
  }

  /**
   * Ends everything: cancels what runs and waits for it to drain (steps first: a slurmstepd
   * whose slurmd is gone lingers), then stops the slurmd and slurmctld, kills what is still
   * there by pid, and removes the run's cgroups. Safe to call twice.
   */
  stop(): Promise<StopReport> {
    return (this.stopped ??= (async () => {
      if (this.slurmctld?.running()) await this.drain().catch(() => undefined);
      await Promise.all(this.nodes.map((n) => n.slurmd.stop('SIGTERM', 5000)));
      await this.slurmctld?.stop('SIGTERM', 5000);
      for (const c of this.clients) await c.stop('SIGKILL');
      const killed = [
        ...this.stepProcesses(),
        ...this.scriptDaemons(),
        ...this.cgroups.clientPids().map(describe),
      ].filter((p): p is SlurmProcess => p !== null);
      for (const p of killed) killQuiet(p.pid);
      await waitFor(
        'killed Slurm processes to leave their cgroups',
        5000,
        () => this.cgroups.allPids().length === 0,
      ).catch(() => undefined);
      const cgroupsLeft = this.cgroups.remove();
      this.endProcesses();
      return { killed, cgroupsLeft };
    })());
  }

  private async drain(): Promise<void> {
    const busy = async () =>
      (await this.jobs()).length > 0 || this.stepProcesses().length > 0 || this.cgroups.clientPids().length > 0;
    if (!(await busy())) return;
    await this.run(['scancel', '--quiet', '--user=root'], { timeoutMs: 5000 });
    await waitFor('Slurm jobs, steps and clients to drain', DRAIN_TIMEOUT_MS, async () => !(await busy()), 200);
  }

  /** Synchronous: for a test process on its way out. */
  private killEverything(): void {
    for (const p of [this.slurmctld, ...this.nodes.map((n) => n.slurmd), ...this.clients])
      if (p?.running()) p.kill('SIGKILL');
    for (const p of [...this.stepProcesses(), ...this.scriptDaemons()]) killQuiet(p.pid);
    for (const pid of this.cgroups.clientPids()) killQuiet(pid);
    const deadline = Date.now() + 2000;
    while (this.cgroups.allPids().length > 0 && Date.now() < deadline) sleepSync(50);
    this.cgroups.remove();
  }
}

/** Why this machine cannot run the Slurm rig, or null. */
export function slurmUnsupported(): string | null {
  const missing = SLURM_PROGRAMS.filter((p) => !which(p));
  if (missing.length > 0) return `${missing.join(', ')} not installed (Debian package slurm-wlm)`;
  return slurmCgroupsUnsupported();
}

/**
 * A top-level Slurm test: as clusterTest (skipped with the reason outside CI where the
 * machine cannot run it, failed in CI), with Slurm and its cgroups required too.
 */
export function slurmTest(t: Test, name: string, opts: { timeout: number }, fn: (t: Test) => Promise<void>): void {
  const why = slurmUnsupported();
  if (why === null || clusterUnsupported() !== null) return clusterTest(t, name, opts, fn);
  if (IN_CI)
    void t.test(name, async (t) => {
      t.fail(`Slurm tests must run in CI, but ${why}`);
    });
  else void t.test(name, { skip: `Slurm test skipped: ${why}` }, async () => {});
}

/**
 * Starts Slurm for a test on a cluster's or network's hosts, or on hosts of its own
 * (`{ hosts: 3 }`, the default). The test's teardown closes it: stop(), then the network it
 * made and the run's directory (kept, and named, when the test failed or
 * RANKD_CLUSTER_KEEP=1). Call stop() to see its report. With a Cluster, call stop() before
 * the test ends: the cluster's own teardown ends whatever else runs in its namespaces,
 * slurmd included.
 */
export async function startSlurm(
  t: Test,
  where: Cluster | Network | { hosts?: number } = {},
  opts: SlurmOptions = {},
): Promise<SlurmCluster> {
  const slurm = await launchSlurm(where, opts, (m) => t.comment(m));
  t.teardown(async () => {
    const keep = process.env['RANKD_CLUSTER_KEEP'] === '1' || !t.passing();
    await slurm.close(keep);
    if (keep) t.comment(`slurm run dir (kept, with every daemon's log): ${slurm.runDir}`);
  });
  return slurm;
}

/** startSlurm without a test: the caller closes it (harness/hold-slurm.ts). */
export async function launchSlurm(
  where: Cluster | Network | { hosts?: number } = {},
  opts: SlurmOptions = {},
  log: (message: string) => void = () => {},
): Promise<SlurmCluster> {
  const why = slurmUnsupported();
  if (why) throw new Error(`cannot start Slurm: ${why}`);
  // first: what a run killed outright left in its cgroups also holds its namespaces, which createNetwork sweeps
  const all = cgroupV1Hierarchies();
  sweepStaleCgroups(all);
  const ownNetwork = !(where instanceof Cluster) && !('cidr' in where);
  const net = where instanceof Cluster ? where.net : 'cidr' in where ? where : createNetwork(where.hosts ?? 3);
  const started = Date.now();
  const runDir = mkdtempSync(join(tmpdir(), `rankd-slurm-${net.subnet}-`));
  const cgroups = new RunCgroups(
    all.filter((h) => SLURM_SUBSYSTEMS.includes(h.dir)),
    net.subnet,
    net.hosts.map((h) => h.name),
  );
  const slurm = new SlurmCluster(net, runDir, cgroups, ownNetwork);
  try {
    await boot(slurm, all, opts);
  } catch (err) {
    await slurm.close(true);
    throw new Error(`${(err as Error).message} (Slurm's logs: ${runDir}/logs)`, { cause: err });
  }
  log(`slurm: ${net.hosts.length} nodes idle in ${Date.now() - started} ms (run dir ${runDir})`);
  return slurm;
}

async function boot(slurm: SlurmCluster, all: Hierarchy[], opts: SlurmOptions): Promise<void> {
  const { net, runDir, cgroups } = slurm;
  for (const d of ['state', 'spool', 'scripts', 'out', 'work', 'cgroup', 'logs']) mkdirSync(join(runDir, d));
  // clients may run as another user (ClientOptions.user): they read the run's scripts and
  // configuration, and batch jobs write their output (a sticky, world-writable dir as /tmp)
  chmodSync(runDir, 0o755);
  chmodSync(join(runDir, 'out'), 0o1777);
  for (const h of net.hosts) mkdirSync(join(runDir, 'spool', h.name));
  cgroups.create(opts.hostCpus);
  const cpus = cgroups.hostCpus(net.hosts[0]!.name);
  const cores = opts.coresPerNode ?? parseCpuList(cpus).length;
  const realMemoryMb = opts.realMemoryMb ?? 4096;
  writeFileSync(slurm.confPath, slurmConf(runDir, net, { cores, realMemoryMb }));
  writeFileSync(join(runDir, 'cgroup.conf'), cgroupConf(runDir));

  slurm.slurmctld = spawnInNetns(
    net.controller.netns,
    // -c: a clean state, never one a previous run left
    [which('slurmctld')!, '-D', '-c', '-f', slurm.confPath],
    { env: slurm.env },
  );
  for (const host of net.hosts) {
    const binds = new Map(cgroups.hierarchies.map((h) => [h, cgroups.hostPath(h, host.name)] as const));
    const slurmd = [which('slurmd')!, '-D', '-N', host.name, '-f', slurm.confPath];
    slurm.nodes.push({
      name: host.name,
      host,
      slurmd: spawnInNetns(host.netns, withCgroupView(join(runDir, 'cgroup'), all, binds, slurmd), {
        env: slurm.env,
      }),
      cpus,
      cpuList: parseCpuList(cpus),
      cgroupRoot: Object.fromEntries([...binds].map(([h, path]) => [h.dir, path])),
    });
  }

  const daemons = [slurm.slurmctld, ...slurm.nodes.map((n) => n.slurmd)];
  const ready = await waitFor(
    `every Slurm node idle within ${READY_TIMEOUT_MS / 1000} s`,
    READY_TIMEOUT_MS,
    async () => {
      const dead = daemons.find((d) => !d.running());
      if (dead) return dead;
      const states = await slurm.nodeStates().catch(() => new Map<string, string>());
      return net.hosts.every((h) => states.get(h.name) === 'idle') ? true : undefined;
    },
    100,
  );
  if (ready !== true) throw new Error(`${ready.argv.join(' ')} exited at start: ${ready.output().slice(-2000)}`);
}

function slurmConf(dir: string, net: Network, node: { cores: number; realMemoryMb: number }): string {
  const names = net.hosts.map((h) => h.name);
  return [
    'ClusterName=rankdtest',
    // job ids of their own per run: rankd up --slurm's /tmp/rankd-JOBID is machine-wide, as are the
    // runs of other tests at the same time (each holds its subnet while it lives)
    `FirstJobId=${net.subnet * 1000 + 1}`,
    // "localhost" is the name slurmctld accepts on any machine; the address is what clients dial
    `SlurmctldHost=localhost(${net.controller.address})`,
    `SlurmctldPort=${SLURMCTLD_PORT}`,
    `SlurmdPort=${SLURMD_PORT}`,
    'AuthType=auth/none',
    'CredType=cred/none',
    'SlurmUser=root',
    'SlurmdUser=root',
    `StateSaveLocation=${dir}/state`,
    // %n is the NodeName (slurmd -N): one spool, pid file and log per node, as a multiple-slurmd build allows
    `SlurmdSpoolDir=${dir}/spool/%n`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd-%n.pid`,
    `SlurmctldLogFile=${dir}/logs/slurmctld.log`,
    `SlurmdLogFile=${dir}/logs/slurmd-%n.log`,
    'SlurmctldDebug=info',
    'SlurmdDebug=info',
    // Steps in Slurm's own cgroups: a job's cores (ConstrainCores) and memory (ConstrainRAMSpace),
    // every process of a step tracked and ended through its freezer cgroup.
    'ProctrackType=proctrack/cgroup',
    'TaskPlugin=task/cgroup,task/affinity',
    'SchedulerType=sched/builtin',
    'SelectType=select/cons_tres',
    // memory is a consumable: a job holds DefMemPerCPU per CPU, and its memory cgroup says so
    'SelectTypeParameters=CR_Core_Memory',
    `DefMemPerCPU=${Math.floor(node.realMemoryMb / node.cores)}`,
    'MpiDefault=none',
    'ReturnToService=2',
    'InactiveLimit=0',
    // a finished job stays readable (scontrol show job) for a minute, long enough to read its state
    'MinJobAge=60',
    // Slurm's default, which sites run with: between SIGTERM and SIGKILL at a step's end, the
    // time rankd's daemons have to end their ranks and remove their directories
    'KillWait=30',
    'JobCompType=jobcomp/none',
    'JobAcctGatherType=jobacct_gather/none',
    'AccountingStorageType=accounting_storage/none',
    // the node lines below are what Slurm schedules, whatever slurmd detects on the shared machine
    'SlurmdParameters=config_overrides',
    ...net.hosts.map(
      (h) =>
        `NodeName=${h.name} NodeAddr=${h.address} Sockets=1 CoresPerSocket=${node.cores} ThreadsPerCore=1 ` +
        `RealMemory=${node.realMemoryMb} State=UNKNOWN`,
    ),
    `PartitionName=rankd Nodes=${names.join(',')} Default=YES MaxTime=INFINITE State=UP`,
    '',
  ].join('\n');
}

function cgroupConf(dir: string): string {
  return [
    'CgroupPlugin=cgroup/v1',
    // each slurmd's mount namespace binds its host's cgroups here (slurm-cgroups.ts)
    `CgroupMountpoint=${dir}/cgroup`,
    'ConstrainCores=yes',
    'ConstrainRAMSpace=yes',
    '',
  ].join('\n');
}

function withImmediate(args: string[]): string[] {
  return args.some((a) => a.startsWith('--immediate') || a.startsWith('-I'))
    ? args
    : [`--immediate=${IMMEDIATE_S}`, ...args];
}

function grantedJob(stderr: string): string | null {
  return /Granted job allocation (\d+)/.exec(stderr)?.[1] ?? null;
}

function comm(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

/** A live process (a zombie has ended: only its parent's wait is missing). */
function describe(pid: number): SlurmProcess | null {
  const c = comm(pid);
  if (c === null || !processAlive(pid)) return null;
  let netns: string | null = null;
  try {
    netns = readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    // gone meanwhile
  }
  return { pid, comm: c, netns };
}

/** Every live process whose name is one of Slurm's daemons, machine-wide (for tests that prove none of theirs is left). */
export function slurmDaemonsOnMachine(): Array<SlurmProcess & { cmdline: string; environ: string }> {
  const out: Array<SlurmProcess & { cmdline: string; environ: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const p = describe(pid);
    if (!p || !['slurmctld', 'slurmscriptd', 'slurmd', 'slurmstepd'].includes(p.comm)) continue;
    const read = (f: string) => {
      try {
        return readFileSync(`/proc/${pid}/${f}`, 'utf8').split('\0').join(' ');
      } catch {
        return '';
      }
    };
    out.push({ ...p, cmdline: read('cmdline'), environ: read('environ') });
  }
  return out;
}

function killQuiet(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
