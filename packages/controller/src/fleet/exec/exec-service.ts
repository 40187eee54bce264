// Ad-hoc commands across the fleet: one exec.run per selected node, all in parallel over
// the links that are already open, collected into one report in host order.
//
// argv by default. A shell string is an explicit opt-in (`shell`), run as /bin/sh -c,
// and recorded as such in the event log next to every other exec.
//
// An exec is held open like a stream (streams/open-streams.ts): revoking the token or user that
// started it ends its commands on every node within the second, as it ends a shell.
import {
  ErrorCode,
  FleetErrorCode,
  RankdError,
  type ExecHostResult,
  type ExecReport,
  type ExecRequest,
  type ExecResult,
  type ExecRun,
  type WithoutId,
} from '@rankd/protocol';
import type { Logger } from 'pino';
import type { EventsRepo } from '../../store/events-repo.js';
import type { FleetInventory } from '../inventory/inventory-service.js';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import type { OpenStreams, StreamEnd, StreamOwner } from '../../streams/open-streams.js';
import { AgentRequests } from './agent-requests.js';
import { failureOf, partitionTargets } from './targets.js';

export const DEFAULT_EXEC_TIMEOUT_S = 300;
export const DEFAULT_EXEC_OUTPUT_BYTES = 64 * 1024;
/** Beyond the command's own timeout: its SIGTERM grace and the trip back. */
const REPLY_MARGIN_MS = 10_000;

export class ExecService {
  constructor(
    private readonly inventory: FleetInventory,
    private readonly registry: NodeRegistry,
    private readonly requests: AgentRequests,
    private readonly events: EventsRepo,
    private readonly log: Logger,
    private readonly streams: OpenStreams,
  ) {}

  /**
   * Runs the exec and answers once every host has. With an `owner`, the exec is one of its open
   * streams: revoking that credential ends the commands still running at once (exec.cancel) and
   * answers for them with RANKD_CREDENTIAL_REVOKED, without waiting on the nodes.
   */
  async run(req: ExecRequest, owner: StreamOwner | null = null): Promise<ExecReport> {
    const argv = commandOf(req);
    const started = performance.now();
    const hosts = this.inventory.resolve(req.pattern);
    const { ready, skipped } = partitionTargets(hosts, this.registry, 'exec');
    const timeoutMs = Math.round((req.timeout ?? DEFAULT_EXEC_TIMEOUT_S) * 1000);
    const message: WithoutId<ExecRun> = {
      type: 'exec.run',
      argv,
      timeoutMs,
      maxOutputBytes: req.maxOutputBytes ?? DEFAULT_EXEC_OUTPUT_BYTES,
      ...(req.cwd ? { cwd: req.cwd } : {}),
      ...(req.env ? { env: req.env } : {}),
      ...(req.user ? { user: req.user } : {}),
    };
    const results = new Map<string, ExecHostResult>();
    for (const s of skipped) results.set(s.host, blank(s.host, s.node, s.status, s.error));
    const requestIds = ready.map(() => AgentRequests.newId());
    // set from the revocation callback, read once every host has answered
    const ended: { by: StreamEnd | null } = { by: null };
    const forget = owner
      ? this.streams.add(owner, (why) => {
          ended.by = why;
          this.cancel(requestIds, why);
        })
      : () => {};
    try {
      await Promise.all(
        ready.map(async (t, i) => {
          try {
            const reply = await this.requests.request<ExecResult & { type: string }>(
              t.node,
              message,
              'exec.result',
              timeoutMs + REPLY_MARGIN_MS,
              requestIds[i],
            );
            results.set(t.host, fromReply(t.host, t.node, reply));
          } catch (err) {
            const failure = failureOf(err);
            results.set(
              t.host,
              blank(t.host, t.node, failure.code === ErrorCode.CredentialRevoked ? 'FAILED' : 'UNREACHABLE', failure),
            );
          }
        }),
      );
    } finally {
      forget();
    }
    const ordered = hosts.map((h) => results.get(h.host)!);
    const summary = {
      success: ordered.filter((r) => r.status === 'SUCCESS').length,
      failed: ordered.filter((r) => r.status === 'FAILED').length,
      unreachable: ordered.filter((r) => r.status === 'UNREACHABLE').length,
    };
    const revoked = ended.by;
    this.events.append('fleet.exec', req.pattern, {
      argv,
      shell: req.shell !== undefined,
      user: req.user ?? null,
      ...summary,
      ...(revoked ? { revoked: revoked.code } : {}),
    });
    this.log.info(
      { pattern: req.pattern, hosts: ordered.length, ...summary, ...(revoked ? { revoked: revoked.message } : {}) },
      'exec finished',
    );
    return {
      pattern: req.pattern,
      argv,
      hosts: ordered,
      summary,
      durationMs: round(performance.now() - started),
      ...(revoked ? { revoked: { code: revoked.code, message: revoked.message } } : {}),
    };
  }

  /** The exec's credential was revoked: each command still running is ended on its node, and answered for now. */
  private cancel(requestIds: string[], why: StreamEnd): void {
    for (const id of requestIds) {
      const link = this.requests.linkOf(id);
      if (!link || !this.requests.abandon(id, new RankdError(why.code, why.message))) continue;
      // a link that is down already ended the command on its side (the agent's link-lost rule)
      link.send({ type: 'exec.cancel', id, reason: why.message.slice(0, 1024) });
    }
  }
}

function commandOf(req: ExecRequest): string[] {
  if (req.command && req.shell !== undefined)
    throw new RankdError(
      ErrorCode.InvalidRequest,
      'give either command (argv) or shell (a string for /bin/sh -c), not both',
    );
  if (req.command) return req.command;
  if (req.shell !== undefined) return ['/bin/sh', '-c', req.shell];
  throw new RankdError(ErrorCode.InvalidRequest, 'nothing to run: give command (argv) or shell');
}

function fromReply(host: string, node: string, r: ExecResult): ExecHostResult {
  const stdout = Buffer.from(r.stdout, 'base64');
  const stderr = Buffer.from(r.stderr, 'base64');
  const ok = r.code === 0 && !r.timedOut && !r.error;
  return {
    host,
    node,
    status: ok ? 'SUCCESS' : 'FAILED',
    rc: r.code,
    signal: r.signal,
    stdout: stdout.toString('utf8'),
    stderr: stderr.toString('utf8'),
    stdoutBytes: r.stdoutBytes,
    stderrBytes: r.stderrBytes,
    truncated: { stdout: r.stdoutBytes > stdout.length, stderr: r.stderrBytes > stderr.length },
    durationMs: round(r.durationMs),
    timedOut: r.timedOut,
    error:
      r.error ??
      (r.timedOut
        ? { code: FleetErrorCode.ExecTimeout, message: 'the command ran past its timeout and was ended' }
        : null),
  };
}

function blank(
  host: string,
  node: string | null,
  status: ExecHostResult['status'],
  error: { code: string; message: string },
): ExecHostResult {
  return {
    host,
    node,
    status,
    rc: null,
    signal: null,
    stdout: '',
    stderr: '',
    stdoutBytes: 0,
    stderrBytes: 0,
    truncated: { stdout: false, stderr: false },
    durationMs: null,
    timedOut: false,
    error,
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
