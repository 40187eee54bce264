// `rankd controller`: runs the controller in the foreground (systemd runs it so).
import { InvalidArgumentError, type Command } from 'commander';
import { join } from 'node:path';
import { DEFAULT_CONTROLLER_PORT as DEFAULT_PORT } from '@rankd/protocol/wire';
import { rankdHome } from '../client/config.js';
import { parseListen } from '../listen-address.js';
import { byteSize, duration, nonNegativeInt, positiveInt } from '../options.js';
import { untilSignal } from '../signals.js';
import { CONTROLLER_SUBDIR, ensureWorkDir, freshSubdir, leaveWorkDir, markKept } from '../up/work-dir.js';
import { InstanceErrorCode } from '@rankd/protocol/errors';
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
  advertise?: string;
  joinSecretFile?: string;
  joinSecretUses?: number;
  joinSecretTtl?: number;
  ephemeral?: boolean;
  workDir?: string;
  keep?: boolean;
  readyJson?: boolean;
}

/** How long an instance's join secret enrolls nodes: long enough for a pod or a node step to come back. */
const DEFAULT_JOIN_SECRET_TTL_MS = 7 * 86_400_000;
const DEFAULT_JOIN_SECRET_USES = 1024;

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
    .option(
      '--advertise <host>',
      'the host name or address in the URL clients and agents are told (default: the listen address)',
    )
    .option(
      '--join-secret-file <file|->',
      'a join secret shared with the agents ("-": standard input): the CA key and one join token are derived from it (docs/instances.md)',
    )
    .option(
      '--join-secret-uses <n>',
      `enrollments the join secret's token allows (default ${DEFAULT_JOIN_SECRET_USES})`,
      positiveInt,
    )
    .option('--join-secret-ttl <duration>', "how long the join secret's token enrolls nodes (default 7d)", duration)
    .option(
      '--ephemeral',
      "a controller of one allocation or pod set: data in --work-dir's controller/, removed when it stops (unless --keep)",
    )
    .option('--work-dir <dir>', 'with --ephemeral: the instance directory on this host')
    .option('--keep', 'with --ephemeral: keep the data directory (database, logs) when it stops')
    .option(
      '--ready-json',
      'once listening, print one JSON line on stdout: url, caHash, ca, apiToken, pid (for rankd up --slurm, through srun)',
    )
    .action(async (opts: ControllerFlags) => {
      if (!USER_NAME.test(opts.admin))
        throw new CliError(
          `--admin ${opts.admin}: a user name is [a-z_][a-z0-9_.-]*, at most 32 characters`,
          ExitCode.Usage,
        );
      const { host, port } = parseListen(opts.listen, DEFAULT_PORT);
      if (opts.ephemeral && !opts.workDir) throw new CliError('--ephemeral needs --work-dir DIR', ExitCode.Usage);
      if (!opts.ephemeral && (opts.workDir || opts.keep))
        throw new CliError('--work-dir and --keep go with --ephemeral', ExitCode.Usage);
      if (opts.joinSecretFile && opts.tlsCert)
        throw new CliError(
          "--join-secret-file derives the controller's CA, which --tls-cert would not be served under: use one",
          ExitCode.Usage,
        );
      // an ephemeral controller removes its data directory when it stops: never one the user named
      if (opts.ephemeral && opts.dataDir)
        throw new CliError(
          "--ephemeral keeps its data in --work-dir's controller/ and removes it when it stops: not with --data-dir",
          ExitCode.Usage,
        );
      const joinSecret = opts.joinSecretFile ? await readSecret(opts.joinSecretFile) : null;
      const dataDir = opts.ephemeral
        ? ephemeralDataDir(opts.workDir!)
        : (opts.dataDir ?? join(rankdHome(), 'controller'));
      // heard from now on: a SIGTERM while the controller starts still removes its directory
      const signalled = untilSignal();
      // loaded here, not at the top: other commands must not pay for fastify and SQLite
      const { fleetTimingFromHeartbeat, startController, DEFAULT_AUDIT_FILE_LIMITS } =
        await import('@rankd/controller');
      const controller = await startController({
        dataDir,
        bootstrapAdmin: opts.admin,
        ...(opts.readyJson ? { logToStderr: true } : {}),
        ...(opts.advertise ? { advertise: opts.advertise } : {}),
        ...(joinSecret
          ? {
              joinSecret: {
                secret: joinSecret,
                uses: opts.joinSecretUses ?? DEFAULT_JOIN_SECRET_USES,
                ttlMs: opts.joinSecretTtl ?? DEFAULT_JOIN_SECRET_TTL_MS,
              },
            }
          : {}),
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
        // one controller per data directory: the other one is what the user wants to reach (and keeps its data)
        if (err.code === 'RANKD_CONTROLLER_RUNNING') throw new CliError(err.message, ExitCode.Unreachable);
        if (opts.ephemeral && !opts.keep) leaveWorkDir(opts.workDir!, dataDir);
        if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
          throw new CliError(
            `${host}:${port} is in use by another process: listen on another port`,
            ExitCode.Unreachable,
          );
        // a refused setting (a --tls-ca bundle, …) is the user's to fix: its code, no stack
        if (err.code?.startsWith('RANKD_')) throw new CliError(`${err.message} (${err.code})`, ExitCode.Usage);
        throw err;
      });
      if (opts.readyJson)
        process.stdout.write(
          JSON.stringify({
            url: controller.url,
            caHash: controller.tls.caHash,
            ca: controller.tls.trustPem,
            apiToken: controller.tokens.api,
            pid: process.pid,
          }) + '\n',
        );
      const signal = await signalled;
      try {
        controller.log.info({ signal }, 'controller stopping');
        // an ephemeral controller has KillWait (Slurm) or the pod's grace period before SIGKILL,
        // after which nothing is removed: its close is bounded, and its directory goes in any case
        await (opts.ephemeral ? withinMs(controller.close(), EPHEMERAL_CLOSE_MS) : controller.close());
      } finally {
        if (opts.ephemeral && opts.keep) markKept(dataDir);
        if (opts.ephemeral) leaveWorkDir(opts.workDir!, opts.keep ? null : dataDir);
      }
      // and it exits, even when something of a close cut short still holds the event loop
      if (opts.ephemeral) setTimeout(() => process.exit(0), 1000).unref();
    });
}

/** How long an ephemeral controller's close may take before its directory is removed anyway. */
const EPHEMERAL_CLOSE_MS = 5000;

function withinMs(work: Promise<void>, ms: number): Promise<void> {
  return Promise.race([work, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
}

/** The fresh controller/ of an ephemeral controller's work directory (up/work-dir.ts), or the refusal. */
function ephemeralDataDir(workDir: string): string {
  try {
    ensureWorkDir(workDir);
    return freshSubdir(join(workDir, CONTROLLER_SUBDIR));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (!code?.startsWith('RANKD_')) throw err;
    // another controller of this instance runs: as with one data directory, it is the one to reach
    const exit = code === InstanceErrorCode.WorkDirInUse ? ExitCode.Unreachable : ExitCode.Usage;
    throw new CliError(`${(err as Error).message} (${code})`, exit);
  }
}

async function readSecret(path: string): Promise<string> {
  const { readJoinSecret } = await import('@rankd/protocol/join-secret');
  try {
    return readJoinSecret(path);
  } catch (err) {
    throw new CliError(`${(err as Error).message} (${(err as { code?: string }).code})`, ExitCode.Usage);
  }
}
