// `rankd controller`: runs the controller in the foreground (systemd runs it so).
import { InvalidArgumentError, type Command } from 'commander';
import { join } from 'node:path';
import { DEFAULT_CONTROLLER_PORT as DEFAULT_PORT } from '@rankd/protocol/wire';
import { rankdHome } from '../client/config.js';
import { parseListen } from '../listen-address.js';
import { byteSize, duration, nonNegativeInt, positiveInt } from '../options.js';
import { untilSignal } from '../signals.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { USER_NAME } from '@rankd/protocol/user-name';

interface ControllerFlags {
  listen: string;
  dataDir?: string;
  heartbeatMs?: number;
  restartGraceMs?: number;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  nodeCertTtl?: number;
  admin: string;
  maxJobsPerUser?: number;
  maxCoresPerUser?: number;
  maxConnsPerSource?: number;
  auditRetention?: number;
  auditFileSize?: number;
  auditFileKeep?: number;
  defaultCpusPerRank: 'share' | number;
  excludeAfter?: number;
}

/** `share`, or a whole number of cores from 1 (the planner's -c range). */
function cpuDefault(value: string): 'share' | number {
  if (value === 'share') return value;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65536)
    throw new InvalidArgumentError(`"${value}" is neither share nor a number of cores from 1 to 65536`);
  return n;
}

export function register(program: Command): void {
  program
    .command('controller')
    .description('run the controller (REST API + agent gateway) in the foreground')
    .option('--listen <addr>', `address to listen on (loopback unless told otherwise)`, `127.0.0.1:${DEFAULT_PORT}`)
    .option('--data-dir <dir>', 'database, tokens and logs (default: ~/.rankd/controller)')
    .option(
      '--heartbeat-ms <ms>',
      'agent heartbeat interval; TTL, lost deadline and restart grace scale with it',
      positiveInt,
    )
    .option(
      '--restart-grace-ms <ms>',
      'after a start, how long known nodes have to reconnect before any is judged',
      positiveInt,
    )
    .option('--tls-cert <file>', "serve this certificate (PEM, chain) instead of one from the controller's own CA")
    .option('--tls-key <file>', 'the key of --tls-cert (PEM)')
    .option(
      '--tls-ca <file>',
      'the root CA --tls-cert chains to, as clients and agents pin it: exactly one self-signed CA certificate (default: the last certificate of the chain)',
    )
    .option(
      '--node-cert-ttl <duration>',
      'lifetime of node certificates; agents renew at about 2/3 of it (default 365d)',
      duration,
    )
    .option(
      '--admin <name>',
      'name of the admin user created at first start, whose token is <data dir>/api-token',
      'admin',
    )
    .option('--max-jobs-per-user <n>', 'running jobs one user may have at once; more wait in the queue', nonNegativeInt)
    .option(
      '--max-cores-per-user <n>',
      "cores one user's running jobs may use at once; more wait in the queue",
      nonNegativeInt,
    )
    .option(
      '--max-conns-per-source <n>',
      'connections without a node certificate one address may hold at once; more are closed as they arrive (default 256)',
      positiveInt,
    )
    .option(
      '--audit-retention <duration>',
      'audit entries older than this are deleted from the store (default 90d)',
      duration,
    )
    .option(
      '--audit-file-size <size>',
      'audit.jsonl is rotated to audit.jsonl.1 before it grows past this (default 64MiB)',
      byteSize,
    )
    .option('--audit-file-keep <n>', 'rotated audit files kept, audit.jsonl.1 … .N (default 5)', nonNegativeInt)
    .option(
      '--default-cpus-per-rank <share|N>',
      'cores per rank for jobs without -c: share divides each node among its ranks (one user per node); N gives each rank N cores, as srun gives 1 CPU per task (a shared cluster; the systemd unit sets 1)',
      cpuDefault,
      'share',
    )
    .option(
      '--exclude-after <k>',
      'drain a node that failed K attempts (of any jobs) within an hour (default 2; 0: never); ' +
        'rankd node resume brings it back',
      nonNegativeInt,
    )
    .action(async (opts: ControllerFlags) => {
      if (!USER_NAME.test(opts.admin))
        throw new CliError(
          `--admin ${opts.admin}: a user name is [a-z_][a-z0-9_.-]*, at most 32 characters`,
          ExitCode.Usage,
        );
      const { host, port } = parseListen(opts.listen, DEFAULT_PORT);
      // loaded here, not at the top: other commands must not pay for fastify and SQLite
      const { fleetTimingFromHeartbeat, startController, DEFAULT_AUDIT_FILE_LIMITS } =
        await import('@rankd/controller');
      const controller = await startController({
        dataDir: opts.dataDir ?? join(rankdHome(), 'controller'),
        bootstrapAdmin: opts.admin,
        host,
        port,
        timing: {
          ...(opts.heartbeatMs ? fleetTimingFromHeartbeat(opts.heartbeatMs) : {}),
          ...(opts.restartGraceMs ? { restartGraceMs: opts.restartGraceMs } : {}),
        },
        tls: {
          ...(opts.tlsCert ? { certFile: opts.tlsCert } : {}),
          ...(opts.tlsKey ? { keyFile: opts.tlsKey } : {}),
          ...(opts.tlsCa ? { caFile: opts.tlsCa } : {}),
        },
        ...(opts.nodeCertTtl ? { nodeCertTtlMs: opts.nodeCertTtl } : {}),
        limits: {
          ...(opts.maxJobsPerUser !== undefined ? { maxJobs: opts.maxJobsPerUser } : {}),
          ...(opts.maxCoresPerUser !== undefined ? { maxCores: opts.maxCoresPerUser } : {}),
        },
        defaultCpusPerRank: opts.defaultCpusPerRank,
        ...(opts.excludeAfter !== undefined ? { excludeAfter: opts.excludeAfter } : {}),
        onStaleLock: (notice) => process.stderr.write(`rankd: ${notice}\n`),
        ...(opts.maxConnsPerSource !== undefined ? { connections: { perSource: opts.maxConnsPerSource } } : {}),
        audit: {
          ...(opts.auditRetention !== undefined ? { retentionMs: opts.auditRetention } : {}),
          file: {
            maxBytes: opts.auditFileSize ?? DEFAULT_AUDIT_FILE_LIMITS.maxBytes,
            keep: opts.auditFileKeep ?? DEFAULT_AUDIT_FILE_LIMITS.keep,
          },
        },
      }).catch((err: Error & { code?: string }) => {
        // one controller per data directory: the other one is what the user wants to reach
        if (err.code === 'RANKD_CONTROLLER_RUNNING') throw new CliError(err.message, ExitCode.Unreachable);
        // a refused setting (a --tls-ca bundle, …) is the user's to fix: its code, no stack
        if (err.code?.startsWith('RANKD_')) throw new CliError(`${err.message} (${err.code})`, ExitCode.Usage);
        throw err;
      });
      const signal = await untilSignal();
      controller.log.info({ signal }, 'controller stopping');
      await controller.close();
    });
}
