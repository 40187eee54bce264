// `rankd doctor`: the preflight a runbook does by hand before a job, over the nodes a
// pattern selects. The facts the agents already sent answer most checks; one
// doctor.inspect per node adds its clock, numactl and the required paths; with `matrix`
// the agents also probe each other over TCP.
import { FleetErrorCode } from '@rankd/protocol';
import type { DoctorCheck, DoctorNode, DoctorNodeReport, DoctorRequest, DoctorResult, Facts } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { EventsRepo } from '../../store/events-repo.js';
import type { AgentRequests } from '../exec/agent-requests.js';
import { failureOf, partitionTargets } from '../exec/targets.js';
import type { FleetInventory } from '../inventory/inventory-service.js';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import { fail, warn } from './check.js';
import { clockChecks, consistencyChecks, type ClockSample } from './fleet-checks.js';
import {
  launcherCheck,
  memlockCheck,
  numaMemoryCheck,
  numactlCheck,
  pathChecks,
  probeToolsCheck,
} from './node-checks.js';
import { nicLocalityCheck, rdmaPortCheck, roceGidCheck } from './rdma-checks.js';
import { agentModeCheck, cpusetCheck, ephemeralMemlockCheck, memoryLimitCheck } from './limit-checks.js';
import { reachMatrix } from './reach-matrix.js';

export const DEFAULT_DOCTOR_TIMEOUT_S = 10;

interface Inspected {
  host: string;
  node: string;
  report: DoctorNodeReport | null;
  facts: Facts | null;
  clock: ClockSample | null;
  error: { code: string; message: string } | null;
}

export class DoctorService {
  constructor(
    private readonly inventory: FleetInventory,
    private readonly registry: NodeRegistry,
    private readonly requests: AgentRequests,
    private readonly events: EventsRepo,
    private readonly log: Logger,
  ) {}

  async run(req: DoctorRequest): Promise<DoctorResult> {
    const pattern = req.pattern ?? 'all';
    const hosts = this.inventory.resolve(pattern);
    const { ready, skipped } = partitionTargets(hosts, this.registry, 'doctor');
    const timeoutMs = Math.round((req.timeout ?? DEFAULT_DOCTOR_TIMEOUT_S) * 1000);
    const paths = req.requirePaths ?? [];

    const inspected: Inspected[] = await Promise.all(
      ready.map(async (t): Promise<Inspected> => {
        const facts = this.registry.get(t.node)?.facts ?? null;
        const sent = Date.now();
        const t0 = performance.now();
        try {
          const report = await this.requests.request<DoctorNodeReport & { type: string }>(
            t.node,
            { type: 'doctor.inspect', paths },
            'doctor.report',
            timeoutMs,
          );
          const rtt = performance.now() - t0;
          const clock = { node: t.node, offsetMs: report.agentTime - (sent + rtt / 2), uncertaintyMs: rtt / 2 };
          return { ...t, report, facts, clock, error: null };
        } catch (err) {
          return { ...t, report: null, facts, clock: null, error: failureOf(err) };
        }
      }),
    );

    const checks: DoctorCheck[] = [];
    for (const s of skipped) {
      const fix =
        s.error.code === FleetErrorCode.NoAgent
          ? `install and start rankd-agent on ${s.host} (deploy/install.sh)`
          : `start or upgrade rankd-agent on ${s.node ?? s.host}`;
      checks.push(fail(s.node ?? s.host, 'agent', s.error.message, fix));
    }
    for (const n of inspected) {
      if (n.error)
        checks.push(
          fail(n.node, 'agent', n.error.message, `check rankd-agent on ${n.node} (\`systemctl status rankd-agent\`)`),
        );
      if (!n.facts) {
        checks.push(
          warn(
            n.node,
            'facts',
            'the agent has not reported facts: hardware checks skipped',
            `see the agent log on ${n.node} for why reading facts failed`,
          ),
        );
      } else {
        // an ephemeral agent cannot raise its memlock limit: the check says who can
        const mode = n.report?.agent;
        const memlock = mode?.ephemeral ? ephemeralMemlockCheck(n.node, n.facts, mode) : memlockCheck(n.node, n.facts);
        checks.push(memlock, rdmaPortCheck(n.node, n.facts));
        const gid = roceGidCheck(n.node, n.facts);
        const locality = nicLocalityCheck(n.node, n.facts);
        if (gid) checks.push(gid);
        if (locality) checks.push(locality);
        checks.push(numaMemoryCheck(n.node, n.facts), cpusetCheck(n.node, n.facts));
        const memoryLimit = memoryLimitCheck(n.node, n.facts);
        if (memoryLimit) checks.push(memoryLimit);
      }
      if (n.report?.agent) checks.push(agentModeCheck(n.node, n.report.agent));
      const launcher = n.report ? launcherCheck(n.node, n.report) : null;
      const tools = n.report ? probeToolsCheck(n.node, n.report, n.facts) : null;
      if (n.report)
        checks.push(numactlCheck(n.node, n.report), ...(launcher ? [launcher] : []), ...pathChecks(n.node, n.report));
      if (tools) checks.push(tools);
    }
    const withFacts = inspected.filter((n): n is Inspected & { facts: Facts } => n.facts !== null);
    checks.push(...consistencyChecks(withFacts.map((n) => ({ node: n.node, facts: n.facts }))));
    checks.push(...clockChecks(inspected.flatMap((n) => (n.clock ? [n.clock] : []))));

    let matrix: DoctorResult['matrix'] = null;
    if (req.matrix) {
      const members = inspected
        .filter((n) => n.report !== null && this.registry.get(n.node)?.capabilities.includes('probe'))
        .map((n) => ({ node: n.node, address: this.registry.get(n.node)?.address ?? null, facts: n.facts }));
      const probed = await reachMatrix(members, this.requests, req.iface);
      matrix = probed.matrix;
      checks.push(...probed.checks);
    }

    const nodes: DoctorNode[] = hosts.map((h) => {
      const i = inspected.find((n) => n.host === h.host);
      const s = skipped.find((n) => n.host === h.host);
      return {
        host: h.host,
        node: h.node,
        reachable: i !== undefined && i.error === null,
        clockOffsetMs: i?.clock ? Math.round(i.clock.offsetMs * 10) / 10 : null,
        error: i?.error ?? s?.error ?? null,
      };
    });
    const summary = {
      pass: checks.filter((c) => c.status === 'PASS').length,
      warn: checks.filter((c) => c.status === 'WARN').length,
      fail: checks.filter((c) => c.status === 'FAIL').length,
    };
    this.events.append('fleet.doctor', pattern, { nodes: nodes.length, ...summary, matrix: req.matrix ?? false });
    this.log.info({ pattern, nodes: nodes.length, ...summary }, 'doctor finished');
    return { pattern, nodes, checks, matrix, summary };
  }
}
