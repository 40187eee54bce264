// The controller's Prometheus metrics. What the controller already holds (nodes and their
// facts, live jobs and ranks, the queue, the log store's totals) is read at scrape time, so
// nothing is counted twice and a scrape never sees a gauge drift from the registry; what
// happens (requests, ended jobs, fences, link round trips) is counted as it happens. Served
// at GET /metrics to the roles that read the fleet (api/policy.ts); every metric, with its
// unit, is listed in docs/metrics.md.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { NodeRegistry } from '../nodes/node-registry.js';
import { isTerminal, type JobManager } from '../jobs/job-manager.js';
import { STREAMS } from '../jobs/log-store.js';
import { AgentLinkRtt } from './agent-link-rtt.js';
import { registerNodeGauges } from './node-gauges.js';
import { restartCause } from './restart-cause.js';

/** Node states always present in the output, at 0 when no node is in them, so a dashboard's series never vanish. */
const NODE_STATES = ['ready', 'unreachable', 'lost'] as const;
const LIVE_JOB_STATES = ['queued', 'pending', 'starting', 'running'] as const;
/** Why a job restarted (restart-cause.ts), always present so a rate over them never starts from nothing. */
const RESTART_CAUSES = ['node-lost', 'signal', 'exit-code', 'failed'] as const;
/** Of prom-client's default metrics: the controller process's own. */
const CONTROLLER_PREFIX = 'rankd_controller_';

export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly requestSeconds: Histogram<'method' | 'route'>;
  private readonly jobsEnded: Counter<'state'>;
  private readonly jobRestarts: Counter<'reason'>;
  private readonly autoDrains: Counter;
  private readonly fenceSeconds: Histogram;
  private readonly linkRtt: AgentLinkRtt;

  constructor(nodes: NodeRegistry, jobs: JobManager) {
    const registers = [this.registry];
    // process CPU, memory, open descriptors, event-loop lag (rankd_controller_nodejs_eventloop_lag_*),
    // GC: a controller's own health
    collectDefaultMetrics({ register: this.registry, prefix: CONTROLLER_PREFIX });
    // prom-client doubles its by-type gauges of active handles, requests and resources with a
    // gauge of their sum named *_total, a counter's suffix, which `promtool check metrics`
    // rightly refuses. The by-type series already sum to it.
    for (const name of ['handles', 'requests', 'resources'])
      this.registry.removeSingleMetric(`${CONTROLLER_PREFIX}nodejs_active_${name}_total`);
    new Gauge({
      name: 'rankd_nodes',
      help: 'Nodes known to the controller, by state.',
      labelNames: ['state'],
      registers,
      collect() {
        const count = new Map<string, number>(NODE_STATES.map((s) => [s, 0]));
        for (const n of nodes.list()) count.set(n.state, (count.get(n.state) ?? 0) + 1);
        for (const [state, n] of count) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'rankd_agents_connected',
      help: 'Agents with a live link to the controller.',
      registers,
      collect() {
        this.set(nodes.list().filter((n) => n.connected).length);
      },
    });
    new Gauge({
      name: 'rankd_jobs_live',
      help: 'Jobs not yet ended, by state.',
      labelNames: ['state'],
      registers,
      collect() {
        const count = new Map<string, number>(LIVE_JOB_STATES.map((s) => [s, 0]));
        for (const live of jobs.live.values()) count.set(live.job.state, (count.get(live.job.state) ?? 0) + 1);
        count.set('queued', jobs.queue().length);
        for (const [state, n] of count) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'rankd_queue_jobs',
      help: 'Jobs waiting in the queue for their resources or their turn (rankd_jobs_live{state="queued"} under its own name).',
      registers,
      collect() {
        this.set(jobs.queue().length);
      },
    });
    new Gauge({
      name: 'rankd_scheduler_last_pass_seconds',
      help: 'How long the last scheduling pass over the queue took.',
      registers,
      collect() {
        this.set(jobs.scheduler.lastPassMs / 1000);
      },
    });
    new Gauge({
      name: 'rankd_ranks_live',
      help: 'Ranks of live jobs that have not ended.',
      registers,
      collect() {
        let n = 0;
        for (const live of jobs.live.values()) for (const r of live.ranks) if (!isTerminal(r)) n++;
        this.set(n);
      },
    });
    // Rank output is counted where it is stored (jobs/log-store.ts), each byte once however
    // often an agent resends it; these read those totals, which start at 0 with the process.
    new Counter({
      name: 'rankd_log_bytes_total',
      help: 'Bytes of rank output received from agents and stored, by stream.',
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const stream of STREAMS) this.inc({ stream }, jobs.logs.ingested(stream).bytes);
      },
    });
    new Counter({
      name: 'rankd_log_lines_total',
      help: 'Newline characters in the rank output stored, by stream (a last line without one is not counted).',
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const stream of STREAMS) this.inc({ stream }, jobs.logs.ingested(stream).lines);
      },
    });
    registerNodeGauges(this.registry, nodes, jobs);
    this.linkRtt = new AgentLinkRtt(this.registry, nodes);
    this.jobsEnded = new Counter({
      name: 'rankd_jobs_ended_total',
      help: 'Jobs ended since the controller started, by final state.',
      labelNames: ['state'],
      registers,
    });
    jobs.on('ended', (_id, state) => this.jobsEnded.inc({ state }));
    this.jobRestarts = new Counter({
      name: 'rankd_job_restarts_total',
      help: 'Failed attempts of jobs queued to start again (rankd run --max-restarts), by why the attempt failed.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of RESTART_CAUSES) this.jobRestarts.inc({ reason }, 0);
    // the attempt that just ended is the view's last: a restart is rare, the view is cheap enough
    jobs.on('restarting', (id) => this.jobRestarts.inc({ reason: restartCause(jobs.view(id)?.attempts.at(-1)) }));
    new Gauge({
      name: 'rankd_jobs_restarting',
      help: 'Jobs in the queue waiting for their next attempt (for its --restart-delay, or for replacement nodes).',
      registers,
      collect() {
        this.set(jobs.queue().filter((q) => q.job.attempt > 0).length);
      },
    });
    this.autoDrains = new Counter({
      name: 'rankd_node_auto_drains_total',
      help: 'Nodes the controller drained because they failed --exclude-after attempts within an hour.',
      registers,
    });
    this.requests = new Counter({
      name: 'rankd_http_requests_total',
      help: 'REST requests answered, by method, route pattern and status (refusals included).',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: 'rankd_http_request_duration_seconds',
      help: 'Time to answer a REST request, by method and route pattern (log follows run for as long as they follow).',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    });
    this.fenceSeconds = new Histogram({
      name: 'rankd_pmi_fence_duration_seconds',
      help: "PMI fences, from a job's first node entering to the answer going out to every node.",
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    });
  }

  /** The controller drained a node that failed too many attempts (nodes/auto-drain.ts). */
  autoDrained(): void {
    this.autoDrains.inc();
  }

  /** A REST answer; `route` is the matched pattern (never the raw URL, which would make one series per job id). */
  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.requestSeconds.observe({ method, route }, seconds);
  }

  fence(seconds: number): void {
    this.fenceSeconds.observe(seconds);
  }

  /** The round trip of a ping on a node's agent link (gateway/agent-connection.ts). */
  agentLinkRtt(node: string, seconds: number): void {
    this.linkRtt.observe(node, seconds);
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
