// A real cluster in one machine: a controller in its own network namespace, an agent in
// each host namespace, all real processes from the built CLI, and helpers to cut links,
// kill and restart daemons, read the history and find what was left behind.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { buildSysfs, type MachineSpec } from '../../helpers/sysfs-fixture.js';
import { netnsPids } from './commands.js';
import { ControllerApi, startForwarder, type Forwarder } from './controller-api.js';
import { checkHistory, readHistory, type HistoryEvent } from './history.js';
import { createNetwork, type Namespace, type Network } from './network.js';
import { spawnInNetns, type Exit, type NsProcess } from './ns-process.js';
import { registerCleanup } from './teardown.js';
import { waitFor } from './wait.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = join(REPO_ROOT, 'packages/cli/dist/main.js');
/** Each namespace has its own ports, so the controller can keep one across restarts. */
export const CONTROLLER_PORT = 7480;

export interface ClusterOptions {
  /** Default 3. */
  hosts?: number;
  /**
   * The controller's heartbeat: TTL 3×, lost (and the agents' lease) 12×, restart grace 6×.
   * Default 1000: the agents drop a link whose pong is a heartbeat late, and a loaded
   * 2-core machine (six torch ranks, a parallel test file) can be that late.
   */
  heartbeatMs?: number;
  restartGraceMs?: number;
  /** Per host (index 0 is host1): a generated machine whose facts the agent presents (`--root`); its ranks still run on the real CPUs. */
  machines?: Array<MachineSpec | null | undefined>;
}

export interface AgentDaemon {
  host: Namespace;
  name: string;
  spoolDir: string;
  /** Facts root given with --root, or null for the real machine. */
  root: string | null;
  process: NsProcess;
  /** Every process this host's agent has been (restarts included). */
  history: NsProcess[];
}

/** How one agent is started, for tests that change what it finds on its host. */
export interface AgentLaunch {
  /** A directory put first on the agent's PATH (the agent looks its tools up there first). */
  pathFirst?: string;
  /**
   * Programs the agent must not find: /dev/null is bind-mounted over each, in a mount
   * namespace of the agent's own, so the host's files are untouched.
   */
  hide?: string[];
}

export interface NodeView {
  name: string;
  state: string;
  connected: boolean;
  address: string | null;
  stateReason: string;
}

export interface RankView {
  rank: number;
  node: string;
  state: string;
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  outputBytes: { stdout: number; stderr: number };
  planned: { cpus: number[]; memNodes: number[] };
  /** The binding the agent read back from /proc once the rank ran. */
  actual: { cpus: number[]; memNodes: number[]; verified: boolean } | null;
}

export interface JobView {
  id: string;
  state: string;
  reason: string;
  exitCode: number | null;
  endedAt: string | null;
  rankMap: {
    masterAddr: string;
    masterPort: number;
    ranks: Array<{ rank: number; node: string; localRank: number; cpus: number[]; env: Record<string, string> }>;
  };
  ranks: RankView[];
}

export interface Leftover {
  netns: string;
  pid: number;
  cmdline: string;
}

export class Cluster {
  readonly agents: AgentDaemon[] = [];
  /** Every `rankd` client process started in the controller's namespace. */
  private readonly clients = new Set<NsProcess>();
  controller!: NsProcess;
  api!: ControllerApi;
  private forwarder: Forwarder | null = null;
  private closed: Promise<void> | null = null;
  /** Kept after a failure, for the daemons' logs. */
  private keepRunDir = process.env['RANKD_CLUSTER_KEEP'] === '1';
  private readonly unregister: () => void;

  private constructor(
    readonly net: Network,
    readonly runDir: string,
    readonly opts: Required<Pick<ClusterOptions, 'heartbeatMs'>> & ClusterOptions,
  ) {
    // last resort for an interrupted process: daemons and network have their own cleanups
    this.unregister = registerCleanup(`cluster run dir ${runDir}`, () => this.removeRunDir());
  }

  /** Builds the cluster; with a test, its teardown closes it (else call close()). */
  static async start(options: ClusterOptions = {}, t?: Test): Promise<Cluster> {
    const net = createNetwork(options.hosts ?? 3);
    const runDir = mkdtempSync(join(tmpdir(), `rankd-cluster-${net.subnet}-`));
    const cluster = new Cluster(net, runDir, { heartbeatMs: 1000, ...options });
    t?.teardown(() => cluster.close(t));
    try {
      await cluster.boot(options);
    } catch (err) {
      if (!t) await cluster.close();
      throw err;
    }
    return cluster;
  }

  private async boot(options: ClusterOptions): Promise<void> {
    const { net, runDir } = this;
    await this.startController();
    const state = JSON.parse(readFileSync(join(this.dataDir, 'controller.json'), 'utf8')) as {
      ca: string;
      caHash: string;
    };
    const api = new ControllerApi(
      join(runDir, 'controller.sock'),
      readFileSync(join(this.dataDir, 'api-token'), 'utf8').trim(),
      readFileSync(state.ca, 'utf8'),
    );
    this.forwarder = await startForwarder(
      net.controller.netns,
      api.socketPath,
      net.controller.address,
      CONTROLLER_PORT,
    );
    this.api = api;
    // agents enroll as real nodes do: a join token (one for the run, many uses) and the CA pinned by hash
    const minted = await api.request<{ token: string }>('/v1/join-tokens', {
      method: 'POST',
      body: { ttlSeconds: 86_400, uses: 10_000, description: 'cluster harness' },
    });
    if (minted.status !== 200) throw new Error(`minting a join token: ${minted.status} ${minted.text}`);
    this.joinToken = minted.body.token;
    this.caHash = state.caHash;
    net.hosts.forEach((host, i) => {
      const machine = options.machines?.[i] ?? null;
      const root = machine ? buildSysfs(join(runDir, host.name, 'root'), machine) : null;
      const spoolDir = join(runDir, host.name, 'spool');
      mkdirSync(spoolDir, { recursive: true });
      const agent: AgentDaemon = {
        host,
        name: host.name,
        spoolDir,
        root,
        process: null as unknown as NsProcess,
        history: [],
      };
      this.agents.push(agent);
      this.startAgent(agent);
    });
    for (const agent of this.agents) await this.waitForNode(agent.name, 'ready', 60_000);
  }

  get dataDir(): string {
    return join(this.runDir, 'controller');
  }

  /** A join token for this run's agents (and for tests that enroll identities of their own). */
  joinToken = '';
  /** The pin of the controller's CA, as `rankd join-command` prints it. */
  caHash = '';

  /** The controller's URL as the namespaces see it (TLS only). */
  get controllerUrl(): string {
    return `https://${this.net.controller.address}:${CONTROLLER_PORT}`;
  }

  /** What a `rankd` client in the controller's namespace needs. */
  get clientEnv(): NodeJS.ProcessEnv {
    return {
      RANKD_URL: this.controllerUrl,
      RANKD_TOKEN: this.api?.apiToken ?? '',
      RANKD_CA: join(this.dataDir, 'ca-bundle.crt'),
      RANKD_HOME: join(this.runDir, 'client'),
    };
  }

  agent(name: string): AgentDaemon {
    const a = this.agents.find((x) => x.name === name);
    if (!a) throw new Error(`no host ${name} in this cluster`);
    return a;
  }

  /** Starts the controller (again, after a kill) on the same data directory and address. */
  async startController(): Promise<NsProcess> {
    const args = [
      process.execPath,
      CLI,
      'controller',
      '--listen',
      `${this.net.controller.address}:${CONTROLLER_PORT}`,
      '--data-dir',
      this.dataDir,
    ];
    args.push('--heartbeat-ms', String(this.opts.heartbeatMs));
    if (this.opts.restartGraceMs) args.push('--restart-grace-ms', String(this.opts.restartGraceMs));
    const proc = spawnInNetns(this.net.controller.netns, args);
    this.controller = proc;
    await waitFor('the controller to listen', 60_000, () => {
      if (!proc.running()) throw new Error(`the controller exited: ${proc.output().slice(-4000)}`);
      try {
        return (
          (JSON.parse(readFileSync(join(this.dataDir, 'controller.json'), 'utf8')) as { pid: number }).pid === proc.pid
        );
      } catch {
        return false;
      }
    });
    return proc;
  }

  async killController(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    this.controller.kill(signal);
    return this.controller.exited;
  }

  async restartController(): Promise<NsProcess> {
    if (this.controller.running()) await this.controller.stop();
    return this.startController();
  }

  startAgent(agent: AgentDaemon, launch: AgentLaunch = {}): NsProcess {
    // the identity lives per host, so a restarted agent is the same enrolled node
    const args = [
      process.execPath,
      CLI,
      'agent',
      '--controller',
      this.controllerUrl,
      '--ca-hash',
      this.caHash,
      '--state-dir',
      join(this.runDir, agent.name, 'state'),
      '--name',
      agent.name,
    ];
    args.push('--spool-dir', agent.spoolDir, '--config', '/dev/null');
    // ranks run as whoever runs the tests, which is root here
    if (process.getuid?.() === 0) args.push('--allow-root');
    if (agent.root) args.push('--root', agent.root);
    const env: NodeJS.ProcessEnv = { RANKD_RECONNECT_MAX_MS: '500', RANKD_JOIN_TOKEN: this.joinToken };
    if (launch.pathFirst) env['PATH'] = `${launch.pathFirst}:${process.env['PATH'] ?? ''}`;
    // a short reconnect backoff keeps the restart and link tests quick
    const proc = spawnInNetns(agent.host.netns, [...hiding(launch.hide ?? []), ...args], { env });
    agent.process = proc;
    agent.history.push(proc);
    return proc;
  }

  async killAgent(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    const agent = this.agent(name);
    agent.process.kill(signal);
    return agent.process.exited;
  }

  async restartAgent(name: string, launch: AgentLaunch = {}): Promise<NsProcess> {
    const agent = this.agent(name);
    if (agent.process.running()) await agent.process.stop();
    return this.startAgent(agent, launch);
  }

  cut(name: string): void {
    this.net.cut(this.agent(name).host);
  }

  restore(name: string): void {
    this.net.restore(this.agent(name).host);
  }

  async nodes(): Promise<NodeView[]> {
    const res = await this.api.get<{ nodes: NodeView[] }>('/v1/nodes');
    if (res.status !== 200) throw new Error(`GET /v1/nodes: ${res.status} ${res.text}`);
    return res.body.nodes;
  }

  async waitForNode(name: string, state: string, timeoutMs = 30_000): Promise<NodeView> {
    return waitFor(`node ${name} to be ${state}`, timeoutMs, async () => {
      const node = (await this.nodes()).find((n) => n.name === name);
      return node && node.state === state && (state !== 'ready' || node.connected) ? node : undefined;
    });
  }

  async job(id: string): Promise<JobView> {
    const res = await this.api.get<JobView>(`/v1/jobs/${id}`);
    if (res.status !== 200) throw new Error(`GET /v1/jobs/${id}: ${res.status} ${res.text}`);
    return res.body;
  }

  async jobs(): Promise<Array<{ id: string; state: string }>> {
    const res = await this.api.get<{ jobs: Array<{ id: string; state: string }> }>('/v1/jobs');
    if (res.status !== 200) throw new Error(`GET /v1/jobs: ${res.status} ${res.text}`);
    return res.body.jobs;
  }

  async waitForJobEnd(id: string, timeoutMs = 120_000): Promise<JobView> {
    return waitFor(`job ${id} to end`, timeoutMs, async () => {
      const job = await this.job(id);
      return job.endedAt ? job : undefined;
    });
  }

  /** A job's stored output of one rank and stream, as text. */
  async logs(id: string, rank: number, stream: 'stdout' | 'stderr' = 'stdout'): Promise<string> {
    const res = await this.api.get<string>(`/v1/jobs/${id}/logs?rank=${rank}&stream=${stream}&format=text`);
    if (res.status !== 200) throw new Error(`logs of ${id}/${rank}: ${res.status} ${res.text}`);
    return res.text;
  }

  /** Starts `rankd ARGS…` in the controller's namespace, pointed at this controller. */
  spawnRankd(args: string[]): NsProcess {
    const proc = spawnInNetns(this.net.controller.netns, [process.execPath, CLI, ...args], {
      env: this.clientEnv,
      cwd: REPO_ROOT,
    });
    this.clients.add(proc);
    void proc.exited.then(() => this.clients.delete(proc));
    return proc;
  }

  /** Runs `rankd ARGS…` to its end (killed after timeoutMs). */
  async rankd(
    args: string[],
    timeoutMs = 120_000,
  ): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
    const proc = this.spawnRankd(args);
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    const exit = await proc.exited;
    clearTimeout(timer);
    return { ...exit, stdout: proc.stdout(), stderr: proc.stderr() };
  }

  events(): HistoryEvent[] {
    return readHistory(this.dataDir).events;
  }

  /** Asserts the history invariants (harness/history.ts) over everything this controller recorded. */
  checkHistory(t: Test): void {
    const problems = checkHistory(readHistory(this.dataDir));
    t.same(problems, [], 'the history checker finds no broken invariant');
  }

  /** The harness's own daemons: everything else in the namespaces belongs to some job. */
  daemonPids(): Set<number> {
    const pids = [this.controller, this.forwarder?.process, ...this.agents.map((a) => a.process), ...this.clients];
    return new Set(pids.filter((p): p is NsProcess => p !== undefined && p.running()).map((p) => p.pid));
  }

  /** Processes in the cluster's namespaces that are none of the harness's daemons. */
  leftovers(): Leftover[] {
    const daemons = this.daemonPids();
    const out: Leftover[] = [];
    for (const ns of [this.net.controller, ...this.net.hosts]) {
      for (const pid of netnsPids(ns.netns)) {
        if (daemons.has(pid)) continue;
        let cmdline: string;
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
        } catch {
          continue; // gone meanwhile
        }
        out.push({ netns: ns.netns, pid, cmdline });
      }
    }
    return out;
  }

  /** Stops everything: clients, agents, controller, forwarder; ends what is left in the namespaces; removes the network. */
  close(t?: Test): Promise<void> {
    return (this.closed ??= (async () => {
      const failed = t !== undefined && !t.passing();
      for (const c of this.clients) await c.stop('SIGKILL');
      await Promise.all(this.agents.map((a) => a.process?.stop('SIGTERM', 5000)));
      await this.controller?.stop('SIGTERM', 5000);
      await this.forwarder?.process.stop('SIGTERM', 2000);
      this.api?.close();
      this.saveDaemonLogs();
      if (failed) {
        this.keepRunDir = true;
        this.explainFailure(t);
      }
      // a failed test may leave ranks behind: end them, by pid, inside our own namespaces
      const left = this.leftovers();
      for (const l of left) {
        try {
          process.kill(l.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      if (left.length > 0)
        t?.comment(
          `teardown ended ${left.length} leftover processes: ${left.map((l) => `${l.pid} ${l.cmdline}`).join('; ')}`,
        );
      await waitFor('the namespaces to empty', 10_000, () =>
        [this.net.controller, ...this.net.hosts].every((ns) => netnsPids(ns.netns).length === 0),
      ).catch(() => undefined);
      this.net.teardown();
      this.unregister();
    })());
  }

  private saveDaemonLogs(): void {
    try {
      writeFileSync(join(this.runDir, 'controller.log'), this.controller?.output() ?? '');
      for (const a of this.agents)
        writeFileSync(join(this.runDir, `${a.name}.log`), a.history.map((p) => p.output()).join('\n--- restart ---\n'));
    } catch {
      // the run dir may already be gone
    }
  }

  private explainFailure(t: Test): void {
    const tail = (s: string) => s.split('\n').slice(-30).join('\n');
    t.comment(`cluster run dir (kept, with every daemon's log): ${this.runDir}`);
    t.comment(`controller (last lines):\n${tail(this.controller?.output() ?? '')}`);
    for (const a of this.agents) t.comment(`${a.name} agent (last lines):\n${tail(a.process?.output() ?? '')}`);
  }

  private removeRunDir(): void {
    if (this.keepRunDir) return;
    rmSync(this.runDir, { recursive: true, force: true });
  }
}

/**
 * The argv prefix that starts a program with `programs` hidden: a private mount namespace
 * where /dev/null covers every file of that name on the usual tool path (a device is no
 * executable), then exec, so the pid is the program's own.
 */
function hiding(programs: string[]): string[] {
  if (programs.length === 0) return [];
  const dirs = [
    ...(process.env['PATH'] ?? '').split(':'),
    '/usr/local/sbin',
    '/usr/local/bin',
    '/usr/sbin',
    '/usr/bin',
    '/sbin',
    '/bin',
  ];
  const files = [...new Set(programs.flatMap((p) => dirs.filter(Boolean).map((d) => join(d, p))))].filter((f) =>
    existsSync(f),
  );
  if (files.length === 0) throw new Error(`none of ${programs.join(', ')} is installed: nothing to hide`);
  const script = 'while [ "$1" != -- ]; do mount --bind /dev/null "$1" || exit 70; shift; done; shift; exec "$@"';
  return ['unshare', '--mount', '--propagation', 'private', '/bin/sh', '-c', script, 'sh', ...files, '--'];
}

/** A cluster for one test: torn down by the test's teardown, whatever happens. */
export function startCluster(t: Test, options: ClusterOptions = {}): Promise<Cluster> {
  return Cluster.start(options, t);
}
