// `rankd check net [PATTERN]`: the nodes a pattern selects measure each other pair by pair,
// both directions, on the NICs a rank would use, in N−1 rounds (the circle method); links
// below a fraction of their rail's median are flagged, and so are the nodes they point at.
// Exits 1 when anything is flagged, as a health check should.
import { InvalidArgumentError, type Command } from 'commander';
import type { NetCheckRequest, NetCheckResult } from '@rankd/protocol';
import { NET_CHECK_DURATION_S, NET_CHECK_THRESHOLD } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { integerIn } from '../options.js';
import { renderNetCheck } from '../checks/net-report.js';
import { registerAllreduce } from '../checks/allreduce-command.js';

/** A check runs N−1 rounds of --duration: 511 rounds of 60 s for 512 nodes is 8.5 h. */
const CHECK_WAIT_MS = 12 * 3600 * 1000;

/** Exit status when a link or a node is flagged. */
export const CHECK_FLAGGED = 1;

interface NetFlags {
  rail?: string;
  duration?: number;
  threshold?: number;
  drain?: boolean;
  last?: boolean;
  json?: boolean;
}

/** A --threshold: a fraction of the rail's median, or a percentage (rankd run --preflight-threshold too). */
export function fraction(value: string): number {
  const t = value.trim();
  const n = t.endsWith('%') ? Number(t.slice(0, -1)) / 100 : Number(t);
  if (!Number.isFinite(n) || n < NET_CHECK_THRESHOLD.min || n > NET_CHECK_THRESHOLD.max)
    throw new InvalidArgumentError(
      `"${value}" is not a fraction between ${NET_CHECK_THRESHOLD.min} and ${NET_CHECK_THRESHOLD.max} (or a percentage, e.g. 80%)`,
    );
  return n;
}

export function register(program: Command): void {
  const check = program
    .command('check')
    .description(
      'measure the fabric: `check net` (pairwise bandwidth and latency matrix), `check allreduce` (busbw sweep)',
    );
  check
    .command('net')
    .description(
      'pairwise bandwidth and latency between the nodes a pattern selects, both directions, on the NICs ranks use ' +
        '(iperf3 over TCP, ib_write_bw and ib_write_lat over RDMA), in N−1 rounds; flags slow links and their nodes',
    )
    .argument('[pattern]', 'hosts: all, group, host*, g1:g2, g1:&g2, g1:!g2, key=value', 'all')
    .option('--rail <nic>', 'measure this NIC on every node: an RDMA device (mlx5_0) or a netdev (eth1)')
    .option(
      '--duration <seconds>',
      `seconds of traffic per probe (default ${NET_CHECK_DURATION_S.default})`,
      integerIn(NET_CHECK_DURATION_S),
    )
    .option(
      '--threshold <fraction>',
      `flag links below this fraction of their rail's median (default ${NET_CHECK_THRESHOLD.default})`,
      fraction,
    )
    .option('--drain', 'drain every flagged node, with the finding as the reason')
    .option('--last', 'print the last stored net check instead of running one')
    .option('--json', 'print JSON')
    .action(async (pattern: string, flags: NetFlags, command: Command) => {
      const config = loadClientConfig();
      let result: NetCheckResult;
      if (flags.last) {
        if (command.args.length > 0 || flags.drain || flags.rail || flags.duration || flags.threshold !== undefined)
          throw new CliError(
            '--last prints the stored check: it takes no pattern, --rail, --duration, --threshold or --drain',
            ExitCode.Usage,
          );
        const { checks } = await call(config, 'GET /v1/checks', { query: { kind: 'net', limit: 1 } });
        if (checks.length === 0)
          throw new CliError('no net check is stored yet: run `rankd check net`', ExitCode.RemoteFailure);
        const stored = await call(config, 'GET /v1/checks/:id', { params: { id: checks[0]!.id } });
        if (stored.kind !== 'net') throw new CliError(`check ${stored.id} is not a net check`, ExitCode.Software);
        result = stored;
      } else {
        const body: NetCheckRequest = {
          pattern,
          ...(flags.rail !== undefined ? { rail: flags.rail } : {}),
          ...(flags.duration !== undefined ? { duration: flags.duration } : {}),
          ...(flags.threshold !== undefined ? { threshold: flags.threshold } : {}),
          ...(flags.drain ? { drain: true } : {}),
        };
        result = await call(config, 'POST /v1/checks/net', { body, timeoutMs: CHECK_WAIT_MS });
      }
      process.stdout.write(flags.json ? JSON.stringify(result, null, 2) + '\n' : renderNetCheck(result));
      const flagged = result.flagged.length > 0 || result.links.some((l) => l.flagged);
      process.exitCode = flagged ? CHECK_FLAGGED : ExitCode.Ok;
    });
  registerAllreduce(check);
}
