// `rankd ping [PATTERN]`: a round trip to each selected agent with its latency, like
// `ansible -m ping` with numbers. Exits 4 (as ansible does) when any is unreachable.
import type { Command } from 'commander';
import { PROBE_TIMEOUT_SECONDS } from '@rankd/protocol/limits';
import { loadClientConfig } from '../client/config.js';
import { call } from '../client/rest.js';
import { ExitCode } from '../exit-codes.js';
import { secondsIn } from '../options.js';
import { EXEC_UNREACHABLE_HOSTS } from './exec.js';

export function register(program: Command): void {
  program
    .command('ping')
    .description('round trip to each agent a pattern selects, with its latency')
    .argument('[pattern]', 'hosts: all, group, host*, g1:g2, g1:&g2, g1:!g2, key=value', 'all')
    .option(
      '--timeout <time>',
      `how long to wait for each agent: seconds or a duration (default 10, at most ${PROBE_TIMEOUT_SECONDS.max})`,
      secondsIn(PROBE_TIMEOUT_SECONDS),
    )
    .option('--json', 'print the REST document of POST /v1/ping')
    .action(async (pattern: string, opts: { timeout?: number; json?: boolean }) => {
      const timeout = opts.timeout;
      const report = await call(loadClientConfig(), 'POST /v1/ping', {
        body: { pattern, ...(timeout !== undefined ? { timeout } : {}) },
        timeoutMs: ((timeout ?? 10) + 30) * 1000,
      });
      if (opts.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
      else {
        for (const h of report.hosts) {
          const name = h.node && h.node !== h.host ? `${h.host} (${h.node})` : h.host;
          process.stdout.write(
            h.status === 'SUCCESS'
              ? `${name} | SUCCESS | pong in ${h.latencyMs} ms\n`
              : `${name} | UNREACHABLE | ${h.error?.message ?? 'no answer'}\n`,
          );
        }
        if (report.hosts.length === 0) process.stderr.write(`rankd: no hosts matched "${pattern}"\n`);
      }
      process.exitCode = report.summary.unreachable > 0 ? EXEC_UNREACHABLE_HOSTS : ExitCode.Ok;
    });
}
